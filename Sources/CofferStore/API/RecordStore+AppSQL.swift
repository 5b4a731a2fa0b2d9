import Coffer
import Foundation
import GRDB

extension RecordStore {
    /// The records of `tableName` whose primary keys the app's own SQL
    /// selects, in the order it selects them: for what no ``StoreQuery``
    /// expresses (a join, a window, a collation of the app's), over clear
    /// columns — a sealed column holds only sealed bytes.
    ///
    /// ```swift
    /// let found = try store.fetchAll(
    ///     "notes", selectingKeys: "SELECT id FROM notes WHERE length(title) > ? ORDER BY createdAt DESC", arguments: [20])
    /// ```
    ///
    /// The SQL runs in a read-only transaction (it cannot write), with `?`
    /// placeholders on SQLite and PostgreSQL alike, and must return a column
    /// named as the table's primary key. It only chooses: each record is
    /// then read and opened as any other, so what it returns is the store's
    /// own, authenticated. A key it selects twice is returned once; one with
    /// no record is skipped.
    public func fetchAll(_ tableName: String, selectingKeys sql: String, arguments: [StoreValue] = []) throws
        -> [StoreRecord]
    {
        try checkOpen()
        return try backend.read { db in
            let state = try refreshed(db)
            let table = try state.schema.table(tableName)
            let keyField = table.field(table.primaryKey)!
            let bound = arguments.map(\.appArgument)
            var keys: [DatabaseValue] = []
            var seen = Set<DatabaseValue>()
            for row in try db.rows(sql, bound) {
                guard let key = row[table.primaryKey] else {
                    throw CofferError(
                        .invalidArgument,
                        "the SQL returns no column \(table.primaryKey): it must select \(table.name)'s primary key")
                }
                _ = try StoreSQL.storeValue(key, for: keyField, table: table.name)
                if !key.isNull, seen.insert(key).inserted { keys.append(key) }
            }
            var records: [DatabaseValue: StoreRecord] = [:]
            let column = StoreSQL.quoted(table.primaryKey)
            for start in stride(from: 0, to: keys.count, by: 500) {
                let chunk = Array(keys[start..<min(keys.count, start + 500)])
                let rows = try db.rows(
                    "\(select(table)) WHERE \(column) IN (\(chunk.map { _ in "?" }.joined(separator: ", ")))", chunk)
                // Each tenant's keys read once for the chunk, not once per row.
                let tenants = try state.tenantKeys(of: rows, table: table, db)
                for row in rows {
                    records[row[table.primaryKey] ?? .null] = try state.record(
                        from: row, table: table, db, resolved: tenants)
                }
            }
            return keys.compactMap { records[$0] }
        }
    }

    /// ``fetchAll(_:selectingKeys:arguments:)`` as typed records.
    public func fetchAll<R: SealedRecord>(_ type: R.Type, selectingKeys sql: String, arguments: [StoreValue] = [])
        throws -> [R]
    {
        try fetchAll(R.storeTable, selectingKeys: sql, arguments: arguments).map { try R(storeRecord: $0) }
    }
}

extension StoreValue {
    /// The value as an argument of the app's SQL.
    fileprivate var appArgument: DatabaseValue {
        switch storage {
        case .text(let text): text.databaseValue
        case .integer(let number): number.databaseValue
        case .double(let number): number.databaseValue
        case .bytes(let bytes): Data(bytes).databaseValue
        case .null: .null
        }
    }
}
