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
final class PostgresBackend: StoreBackend {
    let location: String
    private let configuration: PostgresConnection.Configuration
    private let idle = Locked<[PostgresConnection]>([])
    private let slots: DispatchSemaphore
    private let counter = Locked(0)
    private let logger: Logger

    /// The PostgreSQL schema (namespace) the store's tables live in, when
    /// not the connection's default: several stores in one database.
    private let namespace: String?

    /// `url` is `postgres://USER@HOST[:PORT]/DATABASE[?schema=NAME]`; the
    /// password comes apart (from PGPASSWORD or a file), never inside the URL.
    init(url: String, password: String?, connections: Int = 4) throws {
        guard let components = URLComponents(string: url),
            ["postgres", "postgresql"].contains(components.scheme ?? ""), let host = components.host,
            let user = components.user, components.path.count > 1
        else {
            throw CofferError(.invalidArgument, "a PostgreSQL store is postgres://USER@HOST[:PORT]/DATABASE")
        }
        guard components.password == nil else {
            throw CofferError(
                .invalidArgument, "the database password does not go in the URL: give it in PGPASSWORD or a file")
        }
        let database = String(components.path.dropFirst())
        let namespace = components.queryItems?.first { $0.name == "schema" }?.value
        if let namespace { try StoreSchema.checkName(namespace, what: "PostgreSQL schema") }
        self.namespace = namespace
        configuration = PostgresConnection.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: password, database: database,
            tls: .disable)
        location =
            "postgres://\(user)@\(host):\(components.port ?? 5432)/\(database)"
            + (namespace.map { "?schema=" + $0 } ?? "")
        slots = DispatchSemaphore(value: max(1, connections))
        var logger = Logger(label: "coffer.store.postgres")
        logger.logLevel = .critical
        self.logger = logger
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

    private func transaction<T>(_ begin: String, lock: String?, _ body: (any StoreConnection) throws -> T) throws
        -> T
    {
        try withConnection { connection in
            let db = PostgresStoreConnection(connection: connection, logger: logger)
            try db.execute(begin)
            do {
                if let lock, try db.tableExists(StoreSQL.metaTable) {
                    try db.execute("SELECT 1 FROM \(StoreSQL.metaTable) WHERE name = 'epoch' FOR \(lock)")
                }
                let result = try body(db)
                try db.execute("COMMIT")
                return result
            } catch {
                _ = try? db.execute("ROLLBACK")
                throw error
            }
        }
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
            do {
                connection = try PostgresConnection.connect(
                    on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration, id: id,
                    logger: logger
                ).wait()
            } catch {
                throw CofferError(
                    .io, "cannot connect to the store at \(location): \(PostgresStoreConnection.reason(error))")
            }
            if let namespace {
                try PostgresStoreConnection(connection: connection, logger: logger).execute(
                    "SET search_path TO \(StoreSQL.quoted(namespace))")
            }
        }
        // Back to the idle ones after a failure too: the transaction was rolled back.
        defer { if !connection.isClosed { idle.withLock { $0.append(connection) } } }
        return try body(connection)
    }
}

/// One PostgreSQL connection inside a transaction. The store's SQL is
/// written with `?` placeholders and `IS ?` for null-safe equality; here
/// they become `$1…` and `IS NOT DISTINCT FROM $n`.
struct PostgresStoreConnection: StoreConnection {
    let connection: PostgresConnection
    let logger: Logger
    var dialect: StoreDialect { .postgres }

    func rows(_ sql: String, _ arguments: [DatabaseValue]) throws -> [[String: DatabaseValue]] {
        try run(sql, arguments).rows.map { row in
            var columns: [String: DatabaseValue] = [:]
            for cell in row { columns[cell.columnName] = try Self.value(cell) }
            return columns
        }
    }

    func execute(_ sql: String, _ arguments: [DatabaseValue]) throws -> Int {
        try run(sql, arguments).metadata.rows ?? 0
    }

    func tableExists(_ name: String) throws -> Bool {
        try integer(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?",
            [name.databaseValue]) ?? 0 > 0
    }

    private func run(_ sql: String, _ arguments: [DatabaseValue]) throws -> PostgresQueryResult {
        var bindings = PostgresBindings()
        for argument in arguments {
            switch argument.storage {
            case .null: bindings.appendNull()
            case .int64(let number): bindings.append(number)
            case .double(let number): bindings.append(number)
            case .string(let text): bindings.append(text)
            case .blob(let data): bindings.append(ByteBuffer(bytes: data))
            }
        }
        do {
            return try connection.query(PostgresQuery(unsafeSQL: Self.translate(sql), binds: bindings), logger: logger)
                .wait()
        } catch {
            throw Self.coffer(error)
        }
    }

    /// `?` → `$n` (outside quotes), `IS ?` → `IS NOT DISTINCT FROM $n`.
    static func translate(_ sql: String) -> String {
        var result = ""
        var number = 0
        var quoted: Character?
        for character in sql.replacingOccurrences(of: " IS ?", with: " IS NOT DISTINCT FROM ?") {
            if let open = quoted {
                if character == open { quoted = nil }
                result.append(character)
            } else if character == "'" || character == "\"" {
                quoted = character
                result.append(character)
            } else if character == "?" {
                number += 1
                result += "$\(number)"
            } else {
                result.append(character)
            }
        }
        return result
    }

    static func value(_ cell: PostgresCell) throws -> DatabaseValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2, .int4, .int8: return try cell.decode(Int64.self).databaseValue
        case .bytea:
            var buffer = try cell.decode(ByteBuffer.self)
            return Data(buffer.readBytes(length: buffer.readableBytes) ?? []).databaseValue
        case .float4, .float8: return try cell.decode(Double.self).databaseValue
        case .bool: return (try cell.decode(Bool.self) ? 1 : 0).databaseValue
        default: return try cell.decode(String.self).databaseValue
        }
    }

    /// PostgreSQL's error as a Coffer error: a unique violation is
    /// `refused`; the server's message, never the query's values.
    static func coffer(_ error: any Error) -> CofferError {
        if let error = error as? PSQLError, error.serverInfo?[.sqlState] == "23505" {
            return CofferError(.refused, "a record with this primary key exists")
        }
        return CofferError(.io, "the store's database failed: \(reason(error))")
    }

    static func reason(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(type(of: error))" }
        if let message = error.serverInfo?[.message] { return message }
        return "\(error.code)"
    }
}

extension RecordStore {
    /// Makes a new store in the PostgreSQL database at `url`
    /// (`postgres://USER@HOST[:PORT]/DATABASE[?schema=NAME]`, the password given apart),
    /// which must not hold one already. The cells, index values and
    /// metadata are byte for byte those of a SQLite store.
    public static func create(
        postgres url: String, password: String?, schema: StoreSchema, secret: UnlockSecret,
        kdf: PasswordKDF = .defaultScrypt
    ) throws -> RecordStore {
        let backend = try PostgresBackend(url: url, password: password)
        try backend.write(exclusive: false) { try backend.createNamespace($0) }
        return try create(in: backend, schema: schema, secret: secret, kdf: kdf)
    }

    /// Opens the store in the PostgreSQL database at `url` with `secret`.
    public static func open(postgres url: String, password: String?, secret: UnlockSecret) throws -> RecordStore {
        try open(try PostgresBackend(url: url, password: password), secret: secret)
    }
}
