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
}
