#if Server
import CofferStore
import Foundation
import GRDB

// The audit chain in SQLite: GRDB's one writer appends, so the chain
// never forks.
extension SQLiteKeyRows {
    func appendAudit(_ records: [AuditEntry.Record], now: Int64) async throws {
        let links = try await auditLinks.key()
        return try await pool.write { db in try Self.append(db, records, now: now, links: links) }
    }

    /// Appends `records` after the chain's last entry, inside `db`'s
    /// transaction, linked under a new batch of `links`.
    static func append(_ db: Database, _ records: [AuditEntry.Record], now: Int64, links: AuditLinkKey) throws {
        try append(SQLiteStoreConnection(db: db), records, now: now, links: links)
    }

    /// The same on a connection that binds through SQLite's C API: a key
    /// release appends here, one entry per key released.
    static func append(
        _ connection: SQLiteStoreConnection, _ records: [AuditEntry.Record], now: Int64, links: AuditLinkKey
    ) throws {
        guard !records.isEmpty else { return }
        let batch = links.batch()
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
            let entry = AuditEntry(seq: seq, at: now, record: record, previous: previous, batch: batch)
            rows.append([
                entry.seq.databaseValue, entry.at.databaseValue, entry.actor.databaseValue,
                entry.action.databaseValue, entry.realm.databaseValue, entry.subject.databaseValue,
                entry.device.databaseValue, entry.purpose.databaseValue, entry.version.databaseValue,
                entry.detail.databaseValue, entry.hash.databaseValue, entry.link.databaseValue,
            ])
            previous = entry.hash
        }
        try connection.execute(
            "INSERT INTO audit (seq, at, actor, action, realm, subject, device, purpose, version, detail, hash, link) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        try await auditEntries(realm: realm, subject: subject, span: 50_000)
    }

    /// One subject's entries, found by reading the whole log in order,
    /// `span` entries to a read: the log has no index by subject
    /// (``registerAuditScanMigration(_:)``). Each read is short, so that a
    /// long export keeps no snapshot open for the checkpointer to wait on;
    /// entries are only ever appended, so the reads add up to the log as
    /// it stood when the last began. Each read ends at the `span`th entry
    /// it finds, not at a number, so that no gap in the numbers (a log a
    /// database writer edited) can make the export count through it.
    func auditEntries(realm: String, subject: String, span: Int) async throws -> [AuditEntry] {
        var found: [AuditEntry] = []
        var after: Int64 = 0
        while true {
            let start = after
            let (entries, end) = try await pool.read { db in
                let end = try Int64.fetchOne(
                    db, sql: "SELECT seq FROM audit WHERE seq > ? ORDER BY seq LIMIT 1 OFFSET ?",
                    arguments: [start, span - 1])
                let entries = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT * FROM audit WHERE seq > ? AND seq <= ? AND realm = ? AND subject = ? ORDER BY seq
                        """,
                    arguments: [start, end ?? Int64.max, realm, subject]
                ).map(Self.entry)
                return (entries, end)
            }
            found += entries
            guard let end else { return found }
            after = end
        }
    }

    static func entry(_ row: Row) throws -> AuditEntry {
        try AuditEntry(
            seq: row.decode(forColumn: "seq"), at: row.decode(forColumn: "at"), actor: row.decode(forColumn: "actor"),
            action: row.decode(forColumn: "action"), realm: row.decode(forColumn: "realm"),
            subject: row.decode(forColumn: "subject"), device: row.decode(forColumn: "device"),
            purpose: row.decode(forColumn: "purpose"), version: row.decode(forColumn: "version"),
            detail: row.decode(forColumn: "detail"), hash: row.decode(forColumn: "hash"),
            link: row.decode(forColumn: "link"))
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

    func lastAuditAnchor() async throws -> AuditAnchor? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT seq, hash, at, mac FROM audit_anchors ORDER BY seq DESC LIMIT 1").map {
                try AuditAnchor(
                    seq: $0.decode(forColumn: "seq"), hash: $0.decode(forColumn: "hash"),
                    at: $0.decode(forColumn: "at"), mac: $0.decode(forColumn: "mac"))
            }
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

    /// The log's index by subject goes: it served one operator command
    /// (`audit export`) and cost every key release a page of the index in
    /// its commit, one more for each subject in the batch (in a benchmark
    /// of one subject's fetches, two of the four pages each commit wrote to
    /// the WAL). The export reads the whole log instead (docs/key-server-audit.md).
    static func registerAuditScanMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v8 audit without its subject index") { db in
            try db.execute(sql: "DROP INDEX audit_subject")
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
