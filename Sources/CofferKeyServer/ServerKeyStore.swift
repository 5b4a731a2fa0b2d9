import Coffer
import Crypto
import Foundation
import GRDB
import HTTPTypes

/// Keys as rows (docs/key-server.md): each version of each key is 256
/// bits from the system's CSPRNG, sealed under the server's KEK with its
/// name and version as context. SQLite through GRDB, in WAL mode, so
/// several processes may serve one file; every change is one transaction.
public final class ServerKeyStore: Sendable {
    let pool: DatabasePool
    /// The KEK ring, replaced when a row names a key it lacks (another
    /// process rotated the KEK: ``ServerKeyStore/rewrap(batchSize:progress:)``).
    let ring: Locked<KeyRing>
    let reload: (@Sendable () throws -> KeyRing)?
    var kek: KeyRing { ring.withLock { $0 } }
    /// Seconds since 1970; tests move it.
    let now: @Sendable () -> Int64

    /// Opens (creating when missing) the database at `path`.
    /// - Parameters:
    ///   - path: the SQLite file.
    ///   - kek: the key ring that seals and opens every key.
    ///   - reload: reads the key ring again, when a stored key names a KEK
    ///     key the ring in memory lacks (the KEK was rotated meanwhile).
    ///   - now: the clock, in seconds since 1970.
    public init(
        path: String, kek: KeyRing, reload: (@Sendable () throws -> KeyRing)? = nil,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    )
        throws
    {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            // Destroyed rows are overwritten, not left in free pages.
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        ring = Locked(kek)
        self.reload = reload
        self.now = now
        try Self.migrator.migrate(pool)
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
        return migrator
    }

    // MARK: releasing keys

    /// The current version of `name`'s key, created on first use: of many
    /// first requests at once, exactly one key is made and all receive it.
    public func current(_ name: KeyName) async throws -> ReleasedKey {
        let now = self.now()
        if let row = try inlineSnapshot(name, version: nil).released(now: now, version: nil) {
            return try open(row, name)
        }
        let sealed = try seal(SymmetricKey(size: .bits256), name, version: 1)
        let row = try await pool.write { db -> StoredVersion in
            try Self.gate(db, name, now: now)
            try db.execute(
                sql:
                    "INSERT INTO keys (realm, subject, device, purpose, version, wrapped, created) VALUES (?, ?, ?, ?, 1, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [name.realm, name.subject, name.device, name.purpose, sealed, now])
            return try Self.latest(db, name)!
        }
        return try open(row, name)
    }

    /// Version `version` of `name`'s key: `key-not-found` when it was never
    /// made, `key-retired` below the key's minimum version.
    public func version(_ version: Int, of name: KeyName) async throws -> ReleasedKey {
        let now = self.now()
        let row = try inlineSnapshot(name, version: version).released(now: now, version: version)
        guard let row else { throw Problem(.notFound, "key-not-found", "this key has no version \(version)") }
        return try open(row, name)
    }

    // MARK: changing keys (operators)

    /// Adds a version and makes it current; returns it. A key never made
    /// gets its version 1.
    public func rotate(_ name: KeyName) async throws -> ReleasedKey {
        let now = self.now()
        let row = try await pool.write { db -> StoredVersion in
            try Self.gate(db, name, now: now)
            let next = (try Self.latest(db, name)?.version ?? 0) + 1
            try db.execute(
                sql:
                    "INSERT INTO keys (realm, subject, device, purpose, version, wrapped, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                arguments: [
                    name.realm, name.subject, name.device, name.purpose, next,
                    try self.seal(SymmetricKey(size: .bits256), name, version: next), now,
                ])
            return try Self.latest(db, name)!
        }
        return try open(row, name)
    }

    /// Stops releasing versions below `minimum` (at most the current one).
    public func retire(_ name: KeyName, below minimum: Int) async throws {
        guard minimum >= 1 else {
            throw Problem.badRequest("invalid-minimum-version", "the minimum version is a whole number from 1")
        }
        let now = self.now()
        try await pool.write { db in
            try Self.gate(db, name, now: now)
            guard let current = try Self.latest(db, name)?.version else {
                throw Problem(.notFound, "key-not-found", "this key was never made")
            }
            guard minimum <= current else {
                throw Problem(
                    .conflict, "minimum-above-current",
                    "the minimum version cannot pass the current version, \(current)")
            }
            guard minimum >= (try Self.minimum(db, name)) else {
                throw Problem(
                    .conflict, "retire-backwards", "versions below \(try Self.minimum(db, name)) are retired already")
            }
            try db.execute(
                sql:
                    "INSERT INTO key_floors (realm, subject, device, purpose, minimum) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET minimum = excluded.minimum",
                arguments: [name.realm, name.subject, name.device, name.purpose, minimum])
        }
    }

    // MARK: rows

    /// What a release needs to know of one key, read in one statement
    /// (so in one snapshot, with no transaction around it) on the calling
    /// thread. The key routes' reads are a few indexed lookups that SQLite
    /// answers from its page cache in microseconds and that never wait for
    /// a writer (WAL); running them inline, without GRDB's read transaction
    /// and its hop to a reader queue, more than halved their cost
    /// (docs/key-server.md, "Speed"). Writes stay async, on GRDB's writer.
    func inlineSnapshot(_ name: KeyName, version: Int?) throws -> Snapshot {
        let key =
            version == nil
            ? "SELECT version, wrapped FROM keys WHERE realm = ?1 AND subject = ?2 AND device = ?3 AND purpose = ?4 ORDER BY version DESC LIMIT 1"
            : "SELECT version, wrapped FROM keys WHERE realm = ?1 AND subject = ?2 AND device = ?3 AND purpose = ?4 AND version = ?5"
        let sql = """
            SELECT s.shred_at, s.shredded, f.minimum, k.version, k.wrapped FROM (SELECT 1)
            LEFT JOIN subjects s ON s.realm = ?1 AND s.subject = ?2
            LEFT JOIN key_floors f ON f.realm = ?1 AND f.subject = ?2 AND f.device = ?3 AND f.purpose = ?4
            LEFT JOIN (\(key)) k
            """
        var arguments: StatementArguments = [name.realm, name.subject, name.device, name.purpose]
        if let version { arguments += [version] }
        return try pool.unsafeRead { db in
            let row = try Row.fetchOne(db.cachedStatement(sql: sql), arguments: arguments)!
            return Snapshot(
                shredAt: row["shred_at"], shredded: (row["shredded"] as Int64? ?? 0) != 0, minimum: row["minimum"] ?? 1,
                stored: (row["version"] as Int?) == nil ? nil : StoredVersion(row))
        }
    }

    /// One key as ``inlineSnapshot(_:version:)`` read it.
    struct Snapshot {
        let shredAt: Int64?
        let shredded: Bool
        let minimum: Int
        let stored: StoredVersion?

        /// The version to release, nil when there is none; throws what the
        /// subject's shred state or the key's minimum version forbids.
        func released(now: Int64, version: Int?) throws -> StoredVersion? {
            if let shredAt { try ServerKeyStore.refuse(shredAt: shredAt, shredded: shredded, now: now) }
            if let version, version < minimum {
                throw Problem(
                    .gone, "key-retired",
                    "version \(version) of this key is retired (the lowest version still released is \(minimum))")
            }
            return stored
        }
    }

    func seal(_ key: SymmetricKey, _ name: KeyName, version: Int) throws -> Data {
        try key.withUnsafeBytes { try kek.seal($0, context: try name.context(version: version)) }
    }

    /// A version as stored: the key sealed under the KEK.
    struct StoredVersion: Sendable {
        let version: Int
        let wrapped: Data
        init(_ row: Row) {
            version = row["version"]
            wrapped = row["wrapped"]
        }
    }

    /// Opens a stored version.
    func open(_ row: StoredVersion, _ name: KeyName) throws -> ReleasedKey {
        let (version, wrapped) = (row.version, row.wrapped)
        // Built once: it opens the key and names it.
        let context = try name.context(version: version)
        let bytes: Data
        do {
            bytes = try openWrapped(wrapped, context: context)
        } catch {
            // A row moved to another name, or a KEK that is not this store's.
            throw Problem(.internalServerError, "key-unreadable", "a stored key did not open under the server's KEK")
        }
        return ReleasedKey(
            name: name, version: version, keyID: KeyName.keyID(of: context), key: SymmetricKey(data: bytes))
    }

    /// Opens a sealed key; a KEK key the ring lacks makes it read the
    /// ring again once.
    func openWrapped(_ wrapped: Data, context: SealingContext) throws -> Data {
        do {
            return try kek.open(wrapped, context: context)
        } catch let error as CofferError where error.code == .keyNotFound {
            guard let reload else { throw error }
            let fresh = try reload()
            ring.withLock { $0 = fresh }
            return try fresh.open(wrapped, context: context)
        }
    }

    static func latest(_ db: Database, _ name: KeyName) throws -> StoredVersion? {
        try Row.fetchOne(
            db.cachedStatement(
                sql:
                    "SELECT version, wrapped FROM keys WHERE realm = ? AND subject = ? AND device = ? AND purpose = ? ORDER BY version DESC LIMIT 1"
            ),
            arguments: [name.realm, name.subject, name.device, name.purpose]
        ).map(StoredVersion.init)
    }

    static func minimum(_ db: Database, _ name: KeyName) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(
                sql: "SELECT minimum FROM key_floors WHERE realm = ? AND subject = ? AND device = ? AND purpose = ?"),
            arguments: [name.realm, name.subject, name.device, name.purpose]) ?? 1
    }
}
