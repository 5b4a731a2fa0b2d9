#if Server
import Coffer
import CofferStore
import Foundation
import GRDB
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// A PostgreSQL database through postgres-nio: a few connections kept
/// open, each transaction on one of them, the caller's thread blocked until
/// the server answers (the store's API is synchronous; its async variants
/// run it on threads of their own, never the cooperative pool).
///
/// Every write transaction first takes the `coffer_meta` epoch row FOR
/// SHARE, and a state change FOR UPDATE: writers run side by side, but
/// none runs beside a rotation's or a migration's first and last
/// transactions, so none writes under a state another has moved past.
final class PostgresBackend: SnapshotReads {
    private let endpoint: PostgresEndpoint
    var location: String { endpoint.location }
    private let idle = Locked<[PostgresConnection]>([])
    private let slots: DispatchSemaphore
    private let counter = Locked(0)
    private let metaExists = Locked(false)
    private let closed = Locked(false)
    private let logger: Logger

    /// The PostgreSQL schema (namespace) the store's tables live in, when
    /// not the connection's default: several stores in one database.
    private let namespace: String?

    /// `url` is `postgres://USER@HOST[:PORT]/DATABASE[?schema=NAME][&sslmode=MODE][&sslrootcert=FILE]`
    /// (``PostgresTLS``); the password comes apart (from PGPASSWORD or a
    /// file), never inside the URL.
    init(url: String, password: String?, connections: Int = 4) throws {
        endpoint = try PostgresEndpoint(url, password: password, what: "a PostgreSQL store")
        if let namespace = endpoint.url.schema { try StoreSchema.checkName(namespace, what: "PostgreSQL schema") }
        namespace = endpoint.url.schema
        slots = DispatchSemaphore(value: max(1, connections))
        logger = PostgresEndpoint.quiet
    }

    deinit {
        // Closed before they go (postgres-nio requires it); a store is
        // released on its user's thread, never on an event loop's.
        for connection in idle.withLock({ $0 }) {
            let closing: EventLoopFuture<Void> = connection.close()
            try? closing.wait()
        }
    }

    func read<T>(_ body: (any StoreConnection) throws -> T) throws -> T {
        try transaction("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", lock: nil, body)
    }

    func write<T>(exclusive: Bool, _ body: (any StoreConnection) throws -> T) throws -> T {
        try transaction("BEGIN", lock: exclusive ? "UPDATE" : "SHARE", body)
    }

    /// Makes the store's PostgreSQL schema, if it has one, in a new store's first transaction.
    func createNamespace(_ db: any StoreConnection) throws {
        if let namespace { try db.execute("CREATE SCHEMA IF NOT EXISTS \(StoreSQL.quoted(namespace))") }
    }

    /// PostgreSQL's WAL is the server's business: nothing to do here.
    func checkpoint() throws {}

    /// None: an observation runs its query again every period.
    func changeWatcher() throws -> (any StoreChangeWatcher)? { nil }

    /// Closes the idle connections now; a connection in use is closed when
    /// its transaction ends (``RecordStore/close()`` lets no new one start).
    func close() throws {
        closed.withLock { $0 = true }
        for connection in idle.withLock({ kept in
            defer { kept = [] }
            return kept
        }) {
            let closing: EventLoopFuture<Void> = connection.close()
            try closing.wait()
        }
    }

    /// A transaction on one connection. Statements whose answer is not
    /// needed yet are queued on the connection (postgres-nio runs them in
    /// order) and waited for with the next one, so BEGIN, the epoch row's
    /// lock and the first query cost one wait, not three; a read's COMMIT
    /// is not waited for at all (it cannot fail to keep anything, and the
    /// connection's next statement runs after it).
    private func transaction<T>(_ begin: String, lock: String?, _ body: (any StoreConnection) throws -> T) throws
        -> T
    {
        try withConnection { connection in
            let db = PostgresStoreConnection(connection: connection, logger: logger)
            db.queue(begin)
            do {
                if let lock, try hasMeta(connection) {
                    db.queue("SELECT 1 FROM \(StoreSQL.metaTable) WHERE name = 'epoch' FOR \(lock)")
                }
                let result = try body(db)
                if lock == nil {
                    db.queue("COMMIT")
                } else {
                    try db.execute("COMMIT")
                }
                return result
            } catch {
                _ = try? db.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// Tries a read on the state at `epoch` without a transaction: its one
    /// statement is wrapped so that it returns the epoch row beside its own
    /// rows, from the same snapshot.
    func read<T>(atEpoch epoch: UInt64, _ body: (any StoreConnection) throws -> T) throws -> T? {
        try withConnection { connection in
            let db = PostgresStoreConnection(connection: connection, logger: logger, expecting: epoch)
            do {
                let result = try body(db)
                return db.snapshotFailed ? nil : result
            } catch let error as PostgresStoreConnection.SnapshotMiss {
                _ = error
                return nil
            }
        }
    }

    /// Whether the store's metadata table exists yet (it does once a store
    /// was created through this backend or found by it), remembered so
    /// that a write transaction asks only until it does.
    private func hasMeta(_ connection: PostgresConnection) throws -> Bool {
        if metaExists.withLock({ $0 }) { return true }
        let exists = try PostgresStoreConnection(connection: connection, logger: logger).tableExists(
            StoreSQL.metaTable)
        if exists { metaExists.withLock { $0 = true } }
        return exists
    }

    private func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        slots.wait()
        defer { slots.signal() }
        let connection: PostgresConnection
        if let kept = idle.withLock({ $0.popLast() }), !kept.isClosed {
            connection = kept
        } else {
            let id = counter.withLock { value -> Int in
                value += 1
                return value
            }
            // The URL's schema is the session's search_path from its start.
            connection = try endpoint.connect(id: id, what: "the store")
        }
        // Back to the idle ones after a failure too: the transaction was rolled back.
        defer {
            if closed.withLock({ $0 }) {
                let closing: EventLoopFuture<Void> = connection.close()
                try? closing.wait()
            } else if !connection.isClosed {
                idle.withLock { $0.append(connection) }
            }
        }
        return try body(connection)
    }
}

extension RecordStore {
    /// Makes a new store in the PostgreSQL database at `url`
    /// (`postgres://USER@HOST[:PORT]/DATABASE[?schema=NAME]`, the password given apart),
    /// which must not hold one already. The cells, index values and
    /// metadata are byte for byte those of a SQLite store.
    public static func create(
        postgres url: String, password: String?, schema: StoreSchema, secret: UnlockSecret,
        kdf: PasswordKDF = .defaultScrypt, rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard
    ) throws -> RecordStore {
        let backend = try PostgresBackend(url: url, password: password)
        try backend.write(exclusive: false) { try backend.createNamespace($0) }
        return try create(in: backend, schema: schema, secret: secret, kdf: kdf, rollbackGuard: rollbackGuard)
    }

    /// Makes the plain tables of the PostgreSQL database at `url` a store
    /// without touching a row: `schema` describes tables that exist (in the
    /// URL's `?schema=`, else the connection's default), every field a
    /// clear column of the same name and a type that holds it (text:
    /// `text`, `varchar` or `char`; integer: `smallint`, `integer` or
    /// `bigint`; bytes: `bytea`), and each table's primary key its SQL
    /// primary key. Seal fields afterwards with `migrate`. New rows are
    /// given their integer keys by the store, so a key column
    /// `GENERATED ALWAYS AS IDENTITY` refuses them.
    public static func adopt(
        postgres url: String, password: String?, schema: StoreSchema, secret: UnlockSecret,
        kdf: PasswordKDF = .defaultScrypt, rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard
    ) throws -> RecordStore {
        let backend = try PostgresBackend(url: url, password: password)
        return try adopt(backend, schema: schema, secret: secret, kdf: kdf, rollbackGuard: rollbackGuard) {
            table, db in
            try checkAdoptable(table, db, location: backend.location)
        }
    }

    /// The table exists with every field's column, of a type that holds
    /// it, and the primary key the schema names.
    static func checkAdoptable(_ table: StoreSchema.Table, _ db: any StoreConnection, location: String) throws {
        let columns = try db.rows(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?",
            [table.name.databaseValue])
        guard !columns.isEmpty else { throw CofferError(.invalidArgument, "\(location) has no table \(table.name)") }
        var types: [String: String] = [:]
        for column in columns {
            guard let name = column["column_name"].flatMap(String.fromDatabaseValue),
                let type = column["data_type"].flatMap(String.fromDatabaseValue)
            else { continue }
            types[name] = type
        }
        for field in table.fields {
            guard let type = types[field.name] else {
                throw CofferError(.invalidArgument, "\(table.name) in \(location) has no column \(field.name)")
            }
            guard field.type.postgresColumnTypes.contains(type) else {
                throw CofferError(
                    .invalidArgument,
                    "\(table.name).\(field.name) in \(location) is \(type), which does not hold \(field.type.name)")
            }
        }
        let keys = try db.rows(
            "SELECT a.attname AS name FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(quote_ident(current_schema()) || '.' || quote_ident(?)) AND i.indisprimary",
            [table.name.databaseValue]
        ).compactMap { $0["name"].flatMap(String.fromDatabaseValue) }
        guard keys == [table.primaryKey] else {
            throw CofferError(
                .invalidArgument,
                "\(table.name)'s primary key in \(location) is (\(keys.joined(separator: ", "))), not \(table.primaryKey)"
            )
        }
    }

    /// Opens the store in the PostgreSQL database at `url` with `secret`;
    /// its state is checked as a SQLite store's is (docs/store.md, "The
    /// store's state").
    public static func open(
        postgres url: String, password: String?, secret: UnlockSecret,
        rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard
    ) throws -> RecordStore {
        try open(try PostgresBackend(url: url, password: password), secret: secret, rollbackGuard: rollbackGuard)
    }

    /// Accepts the state the PostgreSQL store holds now, though older than
    /// one already written (a database restored on purpose): it must still
    /// verify under the store's keys. Returns its epoch.
    @discardableResult
    public static func acceptCurrentState(
        postgres url: String, password: String?, secret: UnlockSecret,
        rollbackGuard: any RollbackGuard = RecordStore.defaultRollbackGuard
    ) throws -> UInt64 {
        try acceptCurrentState(
            try PostgresBackend(url: url, password: password), secret: secret, rollbackGuard: rollbackGuard)
    }
}
#endif
