#if Server
import Foundation
import GRDB

// The audit chain in SQLite: GRDB's one writer appends, so the chain
// never forks.
extension SQLiteKeyRows {
    /// Appends `records` after the chain's last entry, inside `db`'s transaction.
    static func append(_ db: Database, _ records: [AuditEntry.Record], now: Int64) throws {
        guard !records.isEmpty else { return }
        let head = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1"))
        var (seq, previous) = head.map { ($0["seq"] as Int64, $0["hash"] as Data) } ?? (0, AuditEntry.genesis)
        let insert = try db.cachedStatement(
            sql:
                "INSERT INTO audit (seq, at, actor, action, realm, subject, device, purpose, version, detail, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        for record in records {
            seq += 1
            let entry = AuditEntry(seq: seq, at: now, record: record, previous: previous)
            try insert.execute(arguments: [
                entry.seq, entry.at, entry.actor, entry.action, entry.realm, entry.subject, entry.device,
                entry.purpose, entry.version, entry.detail, entry.hash,
            ])
            previous = entry.hash
        }
    }

    func auditEntries(after seq: Int64, limit: Int) async throws -> [AuditEntry] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM audit WHERE seq > ? ORDER BY seq LIMIT ?", arguments: [seq, limit]
            ).map(Self.entry)
        }
    }

    func auditEntries(realm: String, subject: String) async throws -> [AuditEntry] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM audit WHERE realm = ? AND subject = ? ORDER BY seq",
                arguments: [realm, subject]
            ).map(Self.entry)
        }
    }

    static func entry(_ row: Row) -> AuditEntry {
        AuditEntry(
            seq: row["seq"], at: row["at"], actor: row["actor"], action: row["action"], realm: row["realm"],
            subject: row["subject"], device: row["device"], purpose: row["purpose"], version: row["version"],
            detail: row["detail"], hash: row["hash"])
    }

    func auditHead() async throws -> AuditHead? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").map {
                AuditHead(seq: $0["seq"], hash: $0["hash"])
            }
        }
    }

    func addAuditAnchor(_ anchor: AuditAnchor) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO audit_anchors (seq, hash, at, mac) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [anchor.seq, anchor.hash, anchor.at, anchor.mac])
        }
    }

    func auditAnchors(after seq: Int64, limit: Int) async throws -> [AuditAnchor] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT seq, hash, at, mac FROM audit_anchors WHERE seq > ? ORDER BY seq LIMIT ?",
                arguments: [seq, limit]
            ).map { AuditAnchor(seq: $0["seq"], hash: $0["hash"], at: $0["at"], mac: $0["mac"]) }
        }
    }

    static func registerAnchorMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v5 audit anchors") { db in
            try db.execute(
                sql: """
                    CREATE TABLE audit_anchors (seq INTEGER PRIMARY KEY NOT NULL, hash BLOB NOT NULL,
                      at INTEGER NOT NULL, mac BLOB NOT NULL) STRICT;
                    """)
        }
    }
}
#endif
