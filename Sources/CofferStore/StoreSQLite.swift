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
struct SQLiteConnection: StoreConnection {
    let db: Database
    var dialect: StoreDialect { .sqlite }

    func rows(_ sql: String, _ arguments: [DatabaseValue]) throws -> [[String: DatabaseValue]] {
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

    func execute(_ sql: String, _ arguments: [DatabaseValue]) throws -> Int {
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

    func tableExists(_ name: String) throws -> Bool { try db.tableExists(name) }

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
        return try body(handle)
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

/// One SQLite file through GRDB: WAL, several processes writing at once
/// (SQLite runs one write transaction at a time), a 30 s busy timeout,
/// `secure_delete` on.
struct SQLiteBackend: StoreBackend {
    let pool: DatabasePool
    let location: String

    init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
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
