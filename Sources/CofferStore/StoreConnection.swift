import Coffer
import Foundation
import GRDB
import GRDBSQLite

/// One database connection inside a transaction, as the store uses it: SQL
/// with `?` placeholders, values and rows as `DatabaseValue`s. The store's
/// logic is written once against it; each backend runs it on its own
/// connections (SQLite through GRDB here).
package protocol StoreConnection {
    var dialect: StoreDialect { get }
    /// Every row `sql` returns, by column name.
    func rows(_ sql: String, _ arguments: [DatabaseValue]) throws -> [[String: DatabaseValue]]
    /// Runs a statement and returns how many rows it changed.
    @discardableResult func execute(_ sql: String, _ arguments: [DatabaseValue]) throws -> Int
    /// Whether a table of this name exists.
    func tableExists(_ name: String) throws -> Bool
}

extension StoreConnection {
    @discardableResult package func execute(_ sql: String) throws -> Int { try execute(sql, []) }

    package func rows(_ sql: String) throws -> [[String: DatabaseValue]] { try rows(sql, []) }

    /// The first column of the first row, or nil when there is none.
    package func value(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> DatabaseValue? {
        guard let row = try rows(sql, arguments).first else { return nil }
        return row.count == 1 ? row.first!.value : nil
    }

    package func integer(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> Int64? {
        guard let value = try value(sql, arguments), case .int64(let number) = value.storage else { return nil }
        return number
    }

    package func data(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> Data? {
        guard let value = try value(sql, arguments), case .blob(let data) = value.storage else { return nil }
        return data
    }
}

/// GRDB's `Database` as a store connection: statements prepared once per
/// SQL text and connection.
struct SQLiteConnection: StoreConnection {
    let db: Database
    var dialect: StoreDialect { .sqlite }

    func rows(_ sql: String, _ arguments: [DatabaseValue]) throws -> [[String: DatabaseValue]] {
        try Row.fetchAll(db.cachedStatement(sql: sql), arguments: Self.arguments(arguments)).map(
            RecordStore.columns)
    }

    func execute(_ sql: String, _ arguments: [DatabaseValue]) throws -> Int {
        // Statements that change the schema are not kept; the rest
        // (INSERT, UPDATE, DELETE, SELECT) are prepared once.
        if let first = sql.utf8.first,
            [UInt8(ascii: "C"), UInt8(ascii: "D"), UInt8(ascii: "A"), UInt8(ascii: "P")].contains(first),
            ["CREATE", "DROP", "ALTER", "PRAGMA"].contains(where: sql.hasPrefix)
        {
            try db.execute(sql: sql, arguments: Self.arguments(arguments))
        } else {
            return try run(db.cachedStatement(sql: sql), arguments)
        }
        return db.changesCount
    }

    /// Binds `values` straight to GRDB's prepared statement and steps it to
    /// the end: what `Statement.execute(arguments:)` does, without building
    /// `StatementArguments`, whose unspecialised generic initialiser cost
    /// more than the row's INSERT. The statement is left reset and unbound,
    /// so GRDB binds its own arguments the next time it runs it.
    func run(_ statement: Statement, _ values: [DatabaseValue]) throws -> Int {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        guard Int(sqlite3_bind_parameter_count(handle)) == values.count else {
            throw CofferError(
                .invalidArgument,
                "the statement takes \(sqlite3_bind_parameter_count(handle)) values, not \(values.count)")
        }
        // SQLITE_TRANSIENT: SQLite copies the bytes before the call returns.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value.storage {
            case .null: code = sqlite3_bind_null(handle, index)
            case .int64(let number): code = sqlite3_bind_int64(handle, index, number)
            case .double(let number): code = sqlite3_bind_double(handle, index, number)
            case .string(let text):
                // The text as a C string, with its byte length (so a NUL inside it is kept).
                code = sqlite3_bind_text(handle, index, text, Int32(text.utf8.count), transient)
            case .blob(let bytes):
                code = bytes.withUnsafeBytes {
                    $0.isEmpty
                        ? sqlite3_bind_zeroblob(handle, index, 0)
                        : sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), transient)
                }
            }
            guard code == SQLITE_OK else { throw failure(code, statement) }
        }
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW { code = sqlite3_step(handle) }
        guard code == SQLITE_DONE else { throw failure(code, statement) }
        return Int(sqlite3_changes(db.sqliteConnection))
    }

    /// The connection's error as GRDB reports it.
    private func failure(_ code: Int32, _ statement: Statement) -> DatabaseError {
        DatabaseError(
            resultCode: ResultCode(rawValue: code),
            message: db.sqliteConnection.map { String(cString: sqlite3_errmsg($0)) }, sql: statement.sql)
    }

    func tableExists(_ name: String) throws -> Bool { try db.tableExists(name) }

    /// GRDB's arguments for these values. Given as existentials, GRDB maps
    /// them with a closure; given as `[DatabaseValue]`, its unspecialised
    /// generic initialiser builds a key path on every call, which cost more
    /// than the INSERT it served.
    static func arguments(_ values: [DatabaseValue]) -> StatementArguments {
        StatementArguments(values.map { $0 as (any DatabaseValueConvertible)? })
    }
}

/// Where a store's rows live: transactions on connections of one database.
/// Errors come out as Coffer errors (a duplicate primary key is `refused`).
package protocol StoreBackend: Sendable {
    /// Names the database in messages ("the store at …"), never with a password.
    var location: String { get }
    func read<T>(_ body: (any StoreConnection) throws -> T) throws -> T
    /// A write transaction; with `exclusive`, no other write transaction
    /// of any process runs beside it (the store's state changes in it).
    func write<T>(exclusive: Bool, _ body: (any StoreConnection) throws -> T) throws -> T
    /// Empties the database's write-ahead log of older page images (after a migration).
    func checkpoint() throws
}

/// One SQLite file through GRDB: WAL, several processes writing at once
/// (SQLite runs one write transaction at a time), a 30 s busy timeout,
/// `secure_delete` on.
struct SQLiteBackend: StoreBackend {
    let pool: DatabasePool
    let location: String

    init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA secure_delete = ON") }
        do { pool = try DatabasePool(path: path, configuration: configuration) } catch let error as DatabaseError {
            throw CofferError(
                .io, "cannot open the store \(path): \(error.message ?? "SQLite error \(error.resultCode)")")
        }
        location = path
    }

    func read<T>(_ body: (any StoreConnection) throws -> T) throws -> T {
        do { return try pool.read { try body(SQLiteConnection(db: $0)) } } catch let error as DatabaseError {
            throw Self.coffer(error)
        }
    }

    func write<T>(exclusive: Bool, _ body: (any StoreConnection) throws -> T) throws -> T {
        do { return try pool.write { try body(SQLiteConnection(db: $0)) } } catch let error as DatabaseError {
            throw Self.coffer(error)
        }
    }

    func checkpoint() throws {
        do { _ = try pool.writeWithoutTransaction { try $0.checkpoint(.truncate) } } catch let error as DatabaseError {
            throw Self.coffer(error)
        }
    }

    static func coffer(_ error: DatabaseError) -> CofferError {
        if error.resultCode == .SQLITE_CONSTRAINT {
            return CofferError(.refused, "a record with this primary key exists (\(error.message ?? "constraint"))")
        }
        return CofferError(.io, "the store's database failed: \(error.message ?? "SQLite error \(error.resultCode)")")
    }
}

extension StoreConnection {
    /// Before picking integer keys for rows that left theirs out: on
    /// PostgreSQL, where writers run side by side, a per-table lock until
    /// the transaction ends (SQLite runs one writer at a time anyway).
    package func lockKeys(of table: String) throws {
        guard dialect == .postgres else { return }
        try execute("SELECT pg_advisory_xact_lock(hashtext(?))", ["coffer keys \(table)".databaseValue])
    }
}
