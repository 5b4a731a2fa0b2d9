#if Server
import Coffer
import CofferStore
import Foundation
import GRDB

/// The rows in one SQLite file through GRDB, in WAL mode, so several
/// processes on one machine may serve it; every change is one transaction
/// on GRDB's writer, synced to disk before it returns, and `secure_delete`
/// overwrites what a shred deletes.
final class SQLiteKeyRows: KeyRows {
    let auditLinks = AuditLinks()
    let pool: DatabasePool
    let checkpointer: WALCheckpointer
    /// The DPoP proofs spent, as the log in the database holds them.
    let spent: SpentProofs
    /// A sweep deleted keys and the WAL has not been cut since.
    private let walHoldsShredded = Locked(false)

    init(path: String) throws {
        pool = try Self.openPool(path)
        try Self.migrator.migrate(pool)
        let spent = SpentProofs()
        try pool.read { db in try spent.load(db) }
        self.spent = spent
        checkpointer = WALCheckpointer(path: path)
    }

    /// The server's connections to the file at `path`, as its writer needs
    /// them; the checkpointer's tests open theirs here too.
    static func openPool(_ path: String) throws -> DatabasePool {
        try Self.claimFiles(path)
        // Checkpoints run beside the writer, not in its commits.
        let configuration = Configuration.secureDelete(busyTimeout: 10) { db in
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        // GRDB puts a WAL database at `synchronous = NORMAL`, after
        // `prepareDatabase` has run: a commit then reaches the disk only at
        // the next checkpoint, so an OS crash or a power cut could take back
        // a key, a rotation or a shred the server had already answered. At
        // FULL every commit syncs the WAL before it returns.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        return pool
    }

    /// Creates the database file 0600 before SQLite opens it (SQLite would
    /// create it with the umask, 0644 on most systems, and gives its WAL and
    /// shared-memory files the database's mode), and refuses a database,
    /// WAL or shared-memory file that is another user's or open to others:
    /// the audit log, the subjects and the wrapped keys are no one else's
    /// to read, wherever `--database` puts them.
    ///
    /// The files are examined by `stat`, and opened only to create the
    /// database where there is none: this process may
    /// already have them open through SQLite (a second store on one file),
    /// and closing any descriptor of a file drops every POSIX lock the
    /// process holds on it, SQLite's included.
    static func claimFiles(_ path: String) throws {
        let created = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if created >= 0 {
            closeDescriptor(created)
        } else if errno != EEXIST {
            throw CofferError(.io, "cannot create the key database \(path): \(String(cString: strerror(errno)))")
        }
        guard try PrivateFile.check(path: path, what: "the key database") else {
            throw CofferError(.io, "the key database \(path) vanished as it was opened")
        }
        // None yet: SQLite makes them with the database's mode.
        _ = try PrivateFile.check(path: path + "-wal", what: "the key database's WAL")
        _ = try PrivateFile.check(path: path + "-shm", what: "the key database's shared memory")
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE keys (realm TEXT NOT NULL, subject TEXT NOT NULL, device TEXT NOT NULL,
                      purpose TEXT NOT NULL, version INTEGER NOT NULL, wrapped BLOB NOT NULL, created INTEGER NOT NULL,
                      PRIMARY KEY (realm, subject, device, purpose, version)) STRICT, WITHOUT ROWID;
                    CREATE TABLE key_floors (realm TEXT NOT NULL, subject TEXT NOT NULL, device TEXT NOT NULL,
                      purpose TEXT NOT NULL, minimum INTEGER NOT NULL,
                      PRIMARY KEY (realm, subject, device, purpose)) STRICT, WITHOUT ROWID;
                    CREATE TABLE subjects (realm TEXT NOT NULL, subject TEXT NOT NULL, shred_at INTEGER NOT NULL,
                      shredded INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (realm, subject)) STRICT, WITHOUT ROWID;
                    CREATE TABLE operators (hash BLOB PRIMARY KEY NOT NULL, name TEXT NOT NULL UNIQUE,
                      scopes TEXT NOT NULL, created INTEGER NOT NULL) STRICT;
                    """)
        }
        migrator.registerMigration("v2 audit") { db in
            try db.execute(
                sql: """
                    CREATE TABLE audit (seq INTEGER PRIMARY KEY NOT NULL, at INTEGER NOT NULL, actor TEXT NOT NULL,
                      action TEXT NOT NULL, realm TEXT NOT NULL, subject TEXT NOT NULL, device TEXT NOT NULL,
                      purpose TEXT NOT NULL, version INTEGER NOT NULL, detail TEXT NOT NULL, hash BLOB NOT NULL) STRICT;
                    CREATE INDEX audit_subject ON audit (realm, subject, seq);
                    """)
        }
        registerRateLimitMigration(&migrator)
        registerAnchorMigration(&migrator)
        registerReplayLogMigration(&migrator)
        registerOperatorRealmMigration(&migrator)
        registerAuditScanMigration(&migrator)
        registerStoreAnchorMigration(&migrator)
        registerOperatorExpiryMigration(&migrator)
        registerKEKRingMigration(&migrator)
        // Keyed audit links (docs/key-server-audit.md): each entry's batch
        // nonce, empty for the entries linked before, by SHA-256 alone.
        migrator.registerMigration("v12 audit links") { db in
            try db.execute(sql: "ALTER TABLE audit ADD COLUMN link BLOB NOT NULL DEFAULT x''")
        }
        return migrator
    }

    // MARK: keys

    func create(_ name: KeyName, wrapped: Data, now: Int64, actor: String) async throws -> StoredVersion {
        let links = try await auditLinks.key()
        return try await pool.write { db in
            try Self.gate(db, name, now: now)
            try db.execute(
                sql:
                    "INSERT INTO keys (realm, subject, device, purpose, version, wrapped, created) VALUES (?, ?, ?, ?, 1, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [name.realm, name.subject, name.device, name.purpose, wrapped, now])
            let made = db.changesCount > 0
            let stored = try Self.latest(db, name)!
            try Self.append(
                db, AuditEntry.Record.firstUse(name, actor: actor, made: made, version: stored.version), now: now,
                links: links)
            return stored
        }
    }

    func rotate(
        _ name: KeyName, now: Int64, audit: AuditEntry.Record, seal: @escaping @Sendable (Int) throws -> Data
    ) async throws -> StoredVersion {
        let links = try await auditLinks.key()
        return try await pool.write { db in
            try Self.gate(db, name, now: now)
            let next = (try Self.latest(db, name)?.version ?? 0) + 1
            try db.execute(
                sql:
                    "INSERT INTO keys (realm, subject, device, purpose, version, wrapped, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                arguments: [name.realm, name.subject, name.device, name.purpose, next, try seal(next), now])
            var audit = audit
            audit.version = Int64(next)
            try Self.append(db, [audit], now: now, links: links)
            return try Self.latest(db, name)!
        }
    }

    func retire(_ name: KeyName, minimum: Int, now: Int64, audit: AuditEntry.Record) async throws {
        let links = try await auditLinks.key()
        return try await pool.write { db in
            try Self.gate(db, name, now: now)
            let floor =
                try Int.fetchOne(
                    db,
                    sql:
                        "SELECT minimum FROM key_floors WHERE realm = ? AND subject = ? AND device = ? AND purpose = ?",
                    arguments: [name.realm, name.subject, name.device, name.purpose]) ?? 1
            try RetireRule.check(minimum: minimum, current: try Self.latest(db, name)?.version, floor: floor)
            try db.execute(
                sql:
                    "INSERT INTO key_floors (realm, subject, device, purpose, minimum) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET minimum = excluded.minimum",
                arguments: [name.realm, name.subject, name.device, name.purpose, minimum])
            try Self.append(db, [audit], now: now, links: links)
        }
    }

    static func stored(_ row: Row) throws -> StoredVersion {
        try StoredVersion(version: row.decode(forColumn: "version"), wrapped: row.decode(forColumn: "wrapped"))
    }

    static func latest(_ db: Database, _ name: KeyName) throws -> StoredVersion? {
        try Row.fetchOne(
            db.cachedStatement(
                sql:
                    "SELECT version, wrapped FROM keys WHERE realm = ? AND subject = ? AND device = ? AND purpose = ? ORDER BY version DESC LIMIT 1"
            ),
            arguments: [name.realm, name.subject, name.device, name.purpose]
        ).map(stored)
    }

    // MARK: shredding

    static func subjectState(_ db: Database, realm: String, subject: String) throws -> (
        shredAt: Int64, shredded: Bool
    )? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT shred_at, shredded FROM subjects WHERE realm = ? AND subject = ?"),
            arguments: [realm, subject]
        ).map { (try $0.decode(forColumn: "shred_at"), try $0.decode(Int64.self, forColumn: "shredded") != 0) }
    }

    static func gate(_ db: Database, _ name: KeyName, now: Int64) throws {
        guard let state = try subjectState(db, realm: name.realm, subject: name.subject) else { return }
        try ShredRule.refuse(shredAt: state.shredAt, shredded: state.shredded, now: now)
    }

    func shred(realm: String, subject: String, at: Int64, now: Int64, audit: AuditEntry.Record) async throws -> Int64 {
        let links = try await auditLinks.key()
        return try await pool.write { db in
            let existing = try Self.subjectState(db, realm: realm, subject: subject)
            let when = try ShredRule.scheduled(at: at, existing: existing)
            try db.execute(
                sql:
                    "INSERT INTO subjects (realm, subject, shred_at) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET shred_at = excluded.shred_at",
                arguments: [realm, subject, when])
            var audit = audit
            audit.detail = "at \(ShredRule.timestamp(when))"
            try Self.append(db, [audit], now: now, links: links)
            return when
        }
    }

    func undoShred(realm: String, subject: String, now: Int64, audit: AuditEntry.Record) async throws {
        let links = try await auditLinks.key()
        return try await pool.write { db in
            try ShredRule.undo(existing: try Self.subjectState(db, realm: realm, subject: subject), now: now)
            try db.execute(sql: "DELETE FROM subjects WHERE realm = ? AND subject = ?", arguments: [realm, subject])
            try Self.append(db, [audit], now: now, links: links)
        }
    }

    /// Shreds what is due, then cuts the WAL (``WALCheckpointer/truncate(within:)``),
    /// which still held the deleted keys' rows as they were last written. A
    /// WAL that could not be cut then (readers held it for seconds) is cut
    /// at a later sweep.
    func sweep(now: Int64) async throws -> Int {
        let swept = try await deleteShredded(now: now)
        if swept > 0 { walHoldsShredded.withLock { $0 = true } }
        if walHoldsShredded.withLock({ $0 }), await checkpointer.truncate() {
            walHoldsShredded.withLock { $0 = false }
        }
        return swept
    }

    /// Also deletes any key of a subject shredded earlier (one made by a
    /// request that passed its check just before the shred committed).
    private func deleteShredded(now: Int64) async throws -> Int {
        let links = try await auditLinks.key()
        return try await pool.write { db in
            let due = try Row.fetchAll(
                db,
                sql: "UPDATE subjects SET shredded = 1 WHERE shredded = 0 AND shred_at <= ? RETURNING realm, subject",
                arguments: [now]
            ).map {
                try AuditEntry.Record.sweep(
                    realm: $0.decode(forColumn: "realm"), subject: $0.decode(forColumn: "subject"))
            }
            try Self.append(db, due, now: now, links: links)
            for table in ["keys", "key_floors"] {
                try db.execute(
                    sql:
                        "DELETE FROM \(table) WHERE EXISTS (SELECT 1 FROM subjects s WHERE s.realm = \(table).realm AND s.subject = \(table).subject AND s.shredded = 1)"
                )
            }
            return due.count
        }
    }

    func ping() async throws { _ = try await pool.read { try Int.fetchOne($0, sql: "SELECT 1") } }

    func close() async { checkpointer.stop() }
}
/// The C library's `close`, which `SQLiteKeyRows.close()` hides inside the type.
private func closeDescriptor(_ descriptor: Int32) { close(descriptor) }
#endif
