#if Server
import CofferStore
import Foundation
import GRDB

// The audit chain in SQLite: GRDB's one writer appends, so the chain
// never forks.
extension SQLiteKeyRows {
    /// Appends `records` after the chain's last entry, inside `db`'s transaction.
    static func append(_ db: Database, _ records: [AuditEntry.Record], now: Int64) throws {
        try append(SQLiteStoreConnection(db: db), records, now: now)
    }

    /// The same on a connection that binds through SQLite's C API: a key
    /// release appends here, one entry per key released.
    static func append(_ connection: SQLiteStoreConnection, _ records: [AuditEntry.Record], now: Int64) throws {
        guard !records.isEmpty else { return }
        let head = try connection.rows("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1", []).first
        var seq: Int64 = 0
        var previous = AuditEntry.genesis
        if let head {
            guard let last = try value(head, "seq", as: Int64.self), let hash = try value(head, "hash", as: Data.self)
            else { throw malformed("audit entry") }
            (seq, previous) = (last, hash)
        }
        var rows: [[DatabaseValue]] = []
        rows.reserveCapacity(records.count)
        for record in records {
            seq += 1
            let entry = AuditEntry(seq: seq, at: now, record: record, previous: previous)
            rows.append([
                entry.seq.databaseValue, entry.at.databaseValue, entry.actor.databaseValue,
                entry.action.databaseValue, entry.realm.databaseValue, entry.subject.databaseValue,
                entry.device.databaseValue, entry.purpose.databaseValue, entry.version.databaseValue,
                entry.detail.databaseValue, entry.hash.databaseValue,
            ])
            previous = entry.hash
        }
        try connection.execute(
            "INSERT INTO audit (seq, at, actor, action, realm, subject, device, purpose, version, detail, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            eachOf: rows)
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

    static func entry(_ row: Row) throws -> AuditEntry {
        try AuditEntry(
            seq: row.decode(forColumn: "seq"), at: row.decode(forColumn: "at"), actor: row.decode(forColumn: "actor"),
            action: row.decode(forColumn: "action"), realm: row.decode(forColumn: "realm"),
            subject: row.decode(forColumn: "subject"), device: row.decode(forColumn: "device"),
            purpose: row.decode(forColumn: "purpose"), version: row.decode(forColumn: "version"),
            detail: row.decode(forColumn: "detail"), hash: row.decode(forColumn: "hash"))
    }

    func auditHead() async throws -> AuditHead? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").map {
                try AuditHead(seq: $0.decode(forColumn: "seq"), hash: $0.decode(forColumn: "hash"))
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
            ).map {
                try AuditAnchor(
                    seq: $0.decode(forColumn: "seq"), hash: $0.decode(forColumn: "hash"),
                    at: $0.decode(forColumn: "at"), mac: $0.decode(forColumn: "mac"))
            }
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
