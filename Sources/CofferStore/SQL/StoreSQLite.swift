import Coffer
import Foundation
import GRDB
import GRDBSQLite

/// GRDB's `Database` as a store connection: statements prepared once per
/// SQL text and connection, values bound and rows read through SQLite's C
/// API on GRDB's prepared statements. (GRDB's `StatementArguments` and
/// `Row` go through unspecialised generic code that cost more than the
/// query it served: a bulk put's INSERT, a lookup's SELECT.) Each
/// statement is left reset and unbound, so GRDB runs it as usual next.
/// The key server's release transaction reads and writes through it too.
package struct SQLiteStoreConnection: StoreConnection {
    package let db: Database
    package var dialect: StoreDialect { .sqlite }

    package init(db: Database) { self.db = db }

    package func rows(_ sql: String, _ arguments: [DatabaseValue]) throws -> [[String: DatabaseValue]] {
        let statement = try db.cachedStatement(sql: sql)
        let names = statement.columnNames
        return try bound(statement, arguments) { handle in
            var rows: [[String: DatabaseValue]] = []
            while try step(handle, statement) {
                var row = [String: DatabaseValue](minimumCapacity: names.count)
                for (index, name) in names.enumerated() {
                    row[name] = DatabaseValue(sqliteStatement: handle, index: Int32(index))
                }
                rows.append(row)
            }
            return rows
        }
    }

    /// The first row's values by column position, or nil for no row: no
    /// names looked up, no dictionary (the key server's release reads one
    /// row per key this way).
    package func firstRow(_ sql: String, _ arguments: [DatabaseValue]) throws -> [DatabaseValue]? {
        let statement = try db.cachedStatement(sql: sql)
        return try bound(statement, arguments) { handle in
            guard try step(handle, statement) else { return nil }
            return (0..<sqlite3_column_count(handle)).map { DatabaseValue(sqliteStatement: handle, index: $0) }
        }
    }

    package func execute(_ sql: String, _ arguments: [DatabaseValue]) throws -> Int {
        // Statements that change the schema are not kept; the rest
        // (INSERT, UPDATE, DELETE, SELECT) are prepared once.
        if let first = sql.utf8.first,
            [UInt8(ascii: "C"), UInt8(ascii: "D"), UInt8(ascii: "A"), UInt8(ascii: "P")].contains(first),
            ["CREATE", "DROP", "ALTER", "PRAGMA"].contains(where: sql.hasPrefix)
        {
            try db.execute(
                sql: sql, arguments: StatementArguments(arguments.map { $0 as (any DatabaseValueConvertible)? }))
            return db.changesCount
        }
        let statement = try db.cachedStatement(sql: sql)
        return try bound(statement, arguments) { handle in
            while try step(handle, statement) {}
            return Int(sqlite3_changes(db.sqliteConnection))
        }
    }

    /// The statement is looked up once, not once per row.
    package func execute(_ sql: String, eachOf arguments: [[DatabaseValue]]) throws {
        let statement = try db.cachedStatement(sql: sql)
        for values in arguments {
            try bound(statement, values) { handle in while try step(handle, statement) {} }
        }
    }

    package func tableExists(_ name: String) throws -> Bool { try db.tableExists(name) }

    /// Runs `body` with `values` bound to the statement, then resets and unbinds it.
    private func bound<T>(_ statement: Statement, _ values: [DatabaseValue], _ body: (SQLiteStatement) throws -> T)
        throws -> T
    {
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
        // Small values are copied by SQLite (SQLITE_TRANSIENT), in one
        // loop; a text or blob over `copiedBytes` is lent instead, so that
        // a bulk put's sealed fields are not copied once more.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        var lent: [Int] = []
        for (offset, value) in values.enumerated() {
            if value.byteCount > Self.copiedBytes, lent.count < Self.lentValues {
                lent.append(offset)
                continue
            }
            let index = Int32(offset + 1)
            let code = bind(
                value, at: index, handle,
                blob: { sqlite3_bind_blob(handle, index, $0, $1, transient) },
                text: { sqlite3_bind_text(handle, index, $0, $1, transient) })
            guard code == SQLITE_OK else { throw failure(code, statement) }
        }
        return try lend(values, lent[...], statement) { try body(handle) }
    }

    /// Values up to this many bytes are copied when bound; larger ones are lent.
    private static let copiedBytes = 64

    /// Up to this many values are lent (``lend(_:_:_:_:)`` nests a
    /// closure per value); any more are copied.
    private static let lentValues = 64

    /// Binds the values at `offsets` without SQLite copying their bytes
    /// (SQLITE_STATIC, a null destructor): each text or blob is bound inside
    /// the closure that lends its bytes, and the rest of them, then `body`,
    /// run inside that closure. So every pointer SQLite holds is valid
    /// until `body` has returned (``bound(_:_:_:)`` then resets and
    /// unbinds the statement).
    private func lend<T>(
        _ values: [DatabaseValue], _ offsets: ArraySlice<Int>, _ statement: Statement, _ body: () throws -> T
    ) throws -> T {
        guard let offset = offsets.first else { return try body() }
        let handle = statement.sqliteStatement
        let index = Int32(offset + 1)
        func next(_ code: Int32) throws -> T {
            guard code == SQLITE_OK else { throw failure(code, statement) }
            return try lend(values, offsets.dropFirst(), statement, body)
        }
        switch values[offset].storage {
        case .string(var text):
            return try text.withUTF8 { utf8 in
                try utf8.withMemoryRebound(to: CChar.self) {
                    try next(sqlite3_bind_text(handle, index, $0.baseAddress, Int32($0.count), nil))
                }
            }
        case .blob(let bytes):
            return try bytes.withUnsafeBytes { raw in
                try next(sqlite3_bind_blob(handle, index, raw.baseAddress, Int32(raw.count), nil))
            }
        default:
            // Only texts and blobs are lent (``DatabaseValue/byteCount``).
            return try next(SQLITE_MISUSE)
        }
    }

    /// Binds a null, a number or an empty blob itself; a blob's or text's
    /// bytes go to `blob` or `text`.
    private func bind(
        _ value: DatabaseValue, at index: Int32, _ handle: SQLiteStatement,
        blob bindBlob: (UnsafeRawPointer?, Int32) -> Int32, text bindText: (UnsafePointer<CChar>?, Int32) -> Int32
    ) -> Int32 {
        switch value.storage {
        case .null: return sqlite3_bind_null(handle, index)
        case .int64(let number): return sqlite3_bind_int64(handle, index, number)
        case .double(let number): return sqlite3_bind_double(handle, index, number)
        case .string(let text):
            // The text as a C string, with its byte length (so a NUL inside it is kept).
            return text.withCString { bindText($0, Int32(text.utf8.count)) }
        case .blob(let bytes):
            return bytes.withUnsafeBytes {
                $0.isEmpty
                    ? sqlite3_bind_zeroblob(handle, index, 0) : bindBlob($0.baseAddress, Int32($0.count))
            }
        }
    }

    /// One step: true with a row to read, false when done.
    private func step(_ handle: SQLiteStatement, _ statement: Statement) throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw failure(code, statement)
        }
    }

    /// The connection's error as GRDB reports it.
    private func failure(_ code: Int32, _ statement: Statement) -> DatabaseError {
        DatabaseError(
            resultCode: ResultCode(rawValue: code),
            message: db.sqliteConnection.map { String(cString: sqlite3_errmsg($0)) }, sql: statement.sql)
    }
}

extension DatabaseValue {
    /// A text's UTF-8 or a blob's bytes, 0 for anything else.
    fileprivate var byteCount: Int {
        switch storage {
        case .string(let text): text.utf8.count
        case .blob(let bytes): bytes.count
        default: 0
        }
    }
}

extension Configuration {
    /// GRDB's settings for a Coffer database file: a writer waits up to
    /// `busyTimeout` seconds for another process's transaction, and every
    /// connection runs with `secure_delete` on (deleted rows are
    /// overwritten, not left in free pages), then `prepare`.
    package static func secureDelete(
        busyTimeout: TimeInterval, prepare: @escaping @Sendable (Database) throws -> Void
    ) -> Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            try prepare(db)
        }
        return configuration
    }
}

/// One SQLite file through GRDB: WAL, several processes writing at once
/// (SQLite runs one write transaction at a time), a 30 s busy timeout,
/// `secure_delete` on.
struct SQLiteBackend: StoreBackend {
    let pool: DatabasePool
    let location: String

    init(path: String) throws {
        let configuration = Configuration.secureDelete(busyTimeout: 30) { db in
            // Blind index values are random, so each insert lands on a random
            // page of the index and a bulk put dirties most of the index's
            // pages: the writer keeps up to 32 MiB of pages in memory
            // (SQLite's default is 2 MiB; filled only as pages are used) and
            // lets the WAL reach 32 MiB before a checkpoint copies it back
            // (not 4 MiB), so that a page rewritten by several transactions
            // is copied once; the WAL file is cut back to 64 MiB after.
            if !db.configuration.readonly {
                try db.execute(sql: "PRAGMA cache_size = -32768")
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 8192")
                try db.execute(sql: "PRAGMA journal_size_limit = 67108864")
            }
        }
        do { pool = try DatabasePool(path: path, configuration: configuration) } catch let error as DatabaseError {
            throw CofferError(
                .io, "cannot open the store \(path): \(error.message ?? "SQLite error \(error.resultCode)")")
        }
        location = path
    }

    func read<T>(_ body: (any StoreConnection) throws -> T) throws -> T {
        do { return try pool.read { try body(SQLiteStoreConnection(db: $0)) } } catch let error as DatabaseError {
            throw Self.coffer(error)
        }
    }

    func write<T>(exclusive: Bool, _ body: (any StoreConnection) throws -> T) throws -> T {
        do { return try pool.write { try body(SQLiteStoreConnection(db: $0)) } } catch let error as DatabaseError {
            throw Self.coffer(error)
        }
    }

    func checkpoint() throws {
        do { _ = try pool.writeWithoutTransaction { try $0.checkpoint(.truncate) } } catch let error as DatabaseError {
            throw Self.coffer(error)
        }
    }

    func close() throws {
        do { try pool.close() } catch let error as DatabaseError { throw Self.coffer(error) }
    }

    func changeWatcher() throws -> (any StoreChangeWatcher)? { try SQLiteChangeWatcher(path: location) }

    static func coffer(_ error: DatabaseError) -> CofferError {
        if error.resultCode == .SQLITE_CONSTRAINT {
            return CofferError(.refused, "a record with this primary key exists (\(error.message ?? "constraint"))")
        }
        return CofferError(.io, "the store's database failed: \(error.message ?? "SQLite error \(error.resultCode)")")
    }
}
