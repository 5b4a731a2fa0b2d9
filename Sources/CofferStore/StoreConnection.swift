import Coffer
import Foundation
import GRDB

/// One database connection inside a transaction, as the store uses it: SQL
/// with `?` placeholders, values and rows as `DatabaseValue`s. The store's
/// logic is written once against it; each backend runs it on its own
/// connections (SQLite through GRDB here).
protocol StoreConnection {
    /// Every row `sql` returns, by column name.
    func rows(_ sql: String, _ arguments: [DatabaseValue]) throws -> [[String: DatabaseValue]]
    /// Runs a statement and returns how many rows it changed.
    @discardableResult func execute(_ sql: String, _ arguments: [DatabaseValue]) throws -> Int
    /// Whether a table of this name exists.
    func tableExists(_ name: String) throws -> Bool
}

extension StoreConnection {
    @discardableResult func execute(_ sql: String) throws -> Int { try execute(sql, []) }

    func rows(_ sql: String) throws -> [[String: DatabaseValue]] { try rows(sql, []) }

    /// The first column of the first row, or nil when there is none.
    func value(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> DatabaseValue? {
        guard let row = try rows(sql, arguments).first else { return nil }
        return row.count == 1 ? row.first!.value : nil
    }

    func integer(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> Int64? {
        guard let value = try value(sql, arguments), case .int64(let number) = value.storage else { return nil }
        return number
    }

    func data(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> Data? {
        guard let value = try value(sql, arguments), case .blob(let data) = value.storage else { return nil }
        return data
    }
}

/// GRDB's `Database` as a store connection: statements prepared once per
/// SQL text and connection.
struct SQLiteConnection: StoreConnection {
    let db: Database

    func rows(_ sql: String, _ arguments: [DatabaseValue]) throws -> [[String: DatabaseValue]] {
        try Row.fetchAll(db.cachedStatement(sql: sql), arguments: StatementArguments(arguments)).map(
            RecordStore.columns)
    }

    func execute(_ sql: String, _ arguments: [DatabaseValue]) throws -> Int {
        if ["CREATE", "DROP", "ALTER", "PRAGMA"].contains(where: sql.hasPrefix) {
            try db.execute(sql: sql, arguments: StatementArguments(arguments))
        } else {
            try db.cachedStatement(sql: sql).execute(arguments: StatementArguments(arguments))
        }
        return db.changesCount
    }

    func tableExists(_ name: String) throws -> Bool { try db.tableExists(name) }
}
