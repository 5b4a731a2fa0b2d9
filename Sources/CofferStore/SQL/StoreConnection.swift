import Coffer
import Foundation
import GRDB

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
    /// Runs one statement once for each set of arguments, in order.
    func execute(_ sql: String, eachOf arguments: [[DatabaseValue]]) throws
    /// Whether a table of this name exists.
    func tableExists(_ name: String) throws -> Bool
    /// Sends a query whose rows are read later, through the closure
    /// returned: on PostgreSQL it travels with the statements after it
    /// instead of costing a round trip of its own; SQLite runs it at once.
    func prefetch(_ sql: String, _ arguments: [DatabaseValue]) -> () throws -> [[String: DatabaseValue]]
    /// Runs a statement whose outcome is needed only when the transaction
    /// commits (its error, if any, surfaces by then at the latest).
    func executeDeferred(_ sql: String, _ arguments: [DatabaseValue]) throws
}

extension StoreConnection {
    @discardableResult package func execute(_ sql: String) throws -> Int { try execute(sql, []) }

    package func prefetch(_ sql: String, _ arguments: [DatabaseValue]) -> () throws -> [[String: DatabaseValue]] {
        let result = Result { try rows(sql, arguments) }
        return { try result.get() }
    }

    package func executeDeferred(_ sql: String, _ arguments: [DatabaseValue]) throws { try execute(sql, arguments) }

    package func execute(_ sql: String, eachOf arguments: [[DatabaseValue]]) throws {
        for values in arguments { try execute(sql, values) }
    }

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
    /// Closes every connection once the transactions under way end; the
    /// backend is not used again.
    func close() throws
    /// A watcher of other connections' commits (SQLite's `data_version` on
    /// a connection of its own), or nil when the backend has none and an
    /// observation runs its query again every period (PostgreSQL).
    func changeWatcher() throws -> (any StoreChangeWatcher)?
}

/// A backend whose reads can skip their transaction: `body` runs with no
/// BEGIN, and its one statement also reads the epoch in the same snapshot;
/// nil when the epoch is not `epoch` or `body` needs more than one
/// statement, and the caller reads again in a transaction. (On PostgreSQL
/// a lookup is then one round trip instead of four.)
package protocol SnapshotReads: StoreBackend {
    func read<T>(atEpoch epoch: UInt64, _ body: (any StoreConnection) throws -> T) throws -> T?
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
