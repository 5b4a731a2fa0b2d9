#if Server
import Coffer
import CofferStorePostgres
import Foundation
import PostgresNIO

// KEK rotation and operators on PostgreSQL.
extension PostgresKeyRows {
    func wrappedCounts() async throws -> [Data: Int] {
        try await database.query("SELECT substring(wrapped FROM 2 FOR 4), count(*) FROM keys GROUP BY 1") { rows in
            var counts: [Data: Int] = [:]
            for try await (keyID, count) in rows.decode((Data, Int).self) { counts[keyID] = count }
            return counts
        }
    }

    func wrapped(notUnder keyID: Data, limit: Int) async throws -> [PendingRow] {
        try await database.query(
            """
            SELECT realm, subject, device, purpose, version, wrapped FROM keys
            WHERE substring(wrapped FROM 2 FOR 4) <> \(keyID) LIMIT \(limit)
            """
        ) { rows in
            var pending: [PendingRow] = []
            for try await (realm, subject, device, purpose, version, wrapped) in rows.decode(
                (String, String, String, String, Int, Data).self)
            {
                pending.append(
                    PendingRow(
                        name: try KeyName(realm: realm, subject: subject, device: device, purpose: purpose),
                        version: version, wrapped: wrapped))
            }
            return pending
        }
    }

    func replaceWrapped(_ rows: [(PendingRow, Data)], now: Int64, audit: AuditEntry.Record) async throws -> Int {
        let rows = rows.map { Replacement(row: $0.0, sealed: $0.1) }
        let links = try await auditLinks.key()
        return try await database.transaction { db in
            var changed = 0
            for replacement in rows {
                let (row, sealed) = (replacement.row, replacement.sealed)
                for try await _ in try await db.run(
                    """
                    UPDATE keys SET wrapped = \(sealed) WHERE realm = \(row.name.realm) AND subject = \(row.name.subject)
                      AND device = \(row.name.device) AND purpose = \(row.name.purpose) AND version = \(row.version)
                      AND wrapped = \(row.wrapped) RETURNING 1
                    """
                ) { changed += 1 }
            }
            var audit = audit
            audit.detail = "\(changed) keys resealed" + (audit.detail.isEmpty ? "" : " " + audit.detail)
            try await Self.append(db, [audit], now: now, links: links)
            return changed
        }
    }

    private struct Replacement: Sendable {
        let row: PendingRow
        let sealed: Data
    }

    func addOperator(
        hash: Data, name: String, scopes: String, realm: String, created: Int64, expires: Int64?,
        audit: AuditEntry.Record
    ) async throws {
        let links = try await auditLinks.key()
        let inserted = try await database.transaction { db in
            var inserted = false
            for try await _ in try await db.run(
                """
                INSERT INTO operators (hash, name, scopes, realm, created, expires)
                VALUES (\(hash), \(name), \(scopes), \(realm), \(created), \(expires))
                ON CONFLICT (name) DO NOTHING RETURNING 1
                """
            ) { inserted = true }
            if inserted { try await Self.append(db, [audit], now: created, links: links) }
            return inserted
        }
        guard inserted else {
            throw KeyServerError(.operatorExists, "an operator named \(name) exists already")
        }
    }

    func operatorInfo(hash: Data) async throws -> OperatorInfo? {
        try await database.query(
            "SELECT name, scopes, realm, created, expires FROM operators WHERE hash = \(hash)"
        ) { rows in
            var info: OperatorInfo?
            for try await (name, scopes, realm, created, expires) in rows.decode(
                (String, String, String?, Int64, Int64?).self)
            {
                info = OperatorInfo(name: name, scopes: scopes, realm: realm, created: created, expires: expires)
            }
            return info
        }
    }

    func operators() async throws -> [OperatorInfo] {
        try await database.query(
            "SELECT name, scopes, realm, created, expires FROM operators ORDER BY name"
        ) { rows in
            var list: [OperatorInfo] = []
            for try await (name, scopes, realm, created, expires) in rows.decode(
                (String, String, String?, Int64, Int64?).self)
            {
                list.append(OperatorInfo(name: name, scopes: scopes, realm: realm, created: created, expires: expires))
            }
            return list
        }
    }

    func removeOperator(name: String, now: Int64, audit: AuditEntry.Record) async throws -> Bool {
        let links = try await auditLinks.key()
        return try await database.transaction { db in
            var removed = false
            for try await _ in try await db.run("DELETE FROM operators WHERE name = \(name) RETURNING 1") {
                removed = true
            }
            if removed { try await Self.append(db, [audit], now: now, links: links) }
            return removed
        }
    }

    func ping() async throws {
        try await database.query("SELECT 1") { rows in for try await _ in rows {} }
    }

    func close() async { await database.close() }
}
#endif
