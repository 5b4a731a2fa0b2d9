#if Server
// The KEK rotation's rewrap on SQLite: rows counted and read by the KEK key
// that sealed them, each replaced only if it is still as read.
import CofferStore
import Foundation
import GRDB

extension SQLiteKeyRows {
    func wrappedCounts() async throws -> [Data: Int] {
        try await pool.read { db in
            var counts: [Data: Int] = [:]
            let rows = try Row.fetchCursor(db, sql: "SELECT substr(wrapped, 2, 4), count(*) FROM keys GROUP BY 1")
            while let row = try rows.next() {
                // `keys` is STRICT, `wrapped` a BLOB: the id is bytes, maybe
                // fewer than 4 in a row someone cut short.
                let keyID = Data.fromDatabaseValue(row[0] as DatabaseValue) ?? Data()
                counts[keyID, default: 0] += Int.fromDatabaseValue(row[1] as DatabaseValue) ?? 0
            }
            return counts
        }
    }

    func wrapped(notUnder keyID: Data, limit: Int) async throws -> [PendingRow] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT realm, subject, device, purpose, version, wrapped FROM keys WHERE substr(wrapped, 2, 4) != ? LIMIT ?",
                arguments: [keyID, limit]
            ).map { row in
                try PendingRow(
                    name: KeyName(
                        realm: row.decode(forColumn: "realm"), subject: row.decode(forColumn: "subject"),
                        device: row.decode(forColumn: "device"), purpose: row.decode(forColumn: "purpose")),
                    version: row.decode(forColumn: "version"), wrapped: row.decode(forColumn: "wrapped"))
            }
        }
    }

    func replaceWrapped(_ rows: [(PendingRow, Data)], now: Int64, audit: AuditEntry.Record) async throws -> Int {
        let links = try await auditLinks.key()
        return try await pool.write { db in
            var changed = 0
            for (row, sealed) in rows {
                try db.execute(
                    sql:
                        "UPDATE keys SET wrapped = ? WHERE realm = ? AND subject = ? AND device = ? AND purpose = ? AND version = ? AND wrapped = ?",
                    arguments: [
                        sealed, row.name.realm, row.name.subject, row.name.device, row.name.purpose, row.version,
                        row.wrapped,
                    ])
                changed += db.changesCount
            }
            var audit = audit
            audit.detail = "\(changed) keys resealed" + (audit.detail.isEmpty ? "" : " " + audit.detail)
            try Self.append(db, [audit], now: now, links: links)
            return changed
        }
    }
}
#endif
