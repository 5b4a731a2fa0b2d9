import Coffer
import Foundation
import GRDB

/// A record: field name → value. Fields left out are null.
public typealias StoreRecord = [String: StoreValue]

extension RecordStore {
    /// Inserts `record` into `table` and returns its primary key. An
    /// integer primary key left out is assigned by SQLite. Sealed fields
    /// are sealed (null too, so a column never shows whether it was set);
    /// blind index values are written under the current index version.
    /// A primary key that exists is `refused`.
    @discardableResult
    public func put(_ record: StoreRecord, into tableName: String) throws -> StoreValue {
        try put(contentsOf: [record], into: tableName)[0]
    }

    /// Inserts every record in one transaction (all or none) and returns
    /// their primary keys in order: the way to load many.
    @discardableResult
    public func put(contentsOf records: [StoreRecord], into tableName: String) throws -> [StoreValue] {
        try write { db, state in
            let table = try state.schema.table(tableName)
            for record in records {
                for name in record.keys where table.field(name) == nil {
                    throw CofferError(.invalidArgument, "\(table.name) has no field \(name)")
                }
            }
            return try records.map { try state.insert($0, table: table, db) }
        }
    }
}

extension StoreState {
    func insert(_ record: StoreRecord, table: StoreSchema.Table, _ db: Database) throws -> StoreValue {
        let clear = table.fields.filter { !$0.sealed && record[$0.name] != nil && record[$0.name] != .null }
        var key = record[table.primaryKey] ?? .null
        if key == .null && table.field(table.primaryKey)?.type != .integer {
            throw CofferError(.invalidArgument, "\(table.name) needs its primary key \(table.primaryKey)")
        }
        let names = clear.map { StoreSQL.quoted($0.name) }.joined(separator: ", ")
        let sql =
            clear.isEmpty
            ? "INSERT INTO \(StoreSQL.quoted(table.name)) DEFAULT VALUES"
            : "INSERT INTO \(StoreSQL.quoted(table.name)) (\(names)) VALUES (\(clear.map { _ in "?" }.joined(separator: ", ")))"
        let values = try clear.map { try StoreSQL.databaseValue(record[$0.name]!, for: $0, table: table.name) }
        try db.execute(sql: sql, arguments: StatementArguments(values))
        if key == .null { key = .integer(db.lastInsertedRowID) }
        try writeSealed(record, key: key, table: table, db)
        return key
    }

    /// Seals the sealed fields and computes the index values of the row `key`.
    func writeSealed(_ record: StoreRecord, key: StoreValue, table: StoreSchema.Table, _ db: Database) throws {
        let columns = try sealedColumns(record, key: key, table: table, fields: table.fields.filter(\.sealed))
        guard !columns.isEmpty else { return }
        let names = columns.keys.sorted()
        let keyField = table.field(table.primaryKey)!
        try db.execute(
            sql:
                "UPDATE \(StoreSQL.quoted(table.name)) SET \(names.map { StoreSQL.quoted($0) + " = ?" }.joined(separator: ", ")) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
            arguments: StatementArguments(
                names.map { columns[$0]! } + [try StoreSQL.databaseValue(key, for: keyField, table: table.name)]))
    }

    /// The sealed cells of `fields` for `record` (row `key`) and their
    /// index values under the current version, by column.
    func sealedColumns(_ record: StoreRecord, key: StoreValue, table: StoreSchema.Table, fields: [StoreSchema.Field])
        throws -> [String: DatabaseValue]
    {
        var columns: [String: DatabaseValue] = [:]
        for field in fields {
            let context = try keys.context(
                table: table.name, column: field.name, primaryKey: key,
                bound: field.bind.map { ($0, record[$0] ?? .null) })
            columns[field.name] = Data(try keys.sealCell(record[field.name] ?? .null, context: context)).databaseValue
            for index in field.indexes {
                columns[index.name] = try indexValue(
                    index, of: field, in: record, table: table, version: keys.currentIndexVersion)
            }
        }
        return columns
    }

    /// A row as a record: clear columns read, sealed cells opened with the
    /// row's own primary key and bound fields. A field being migrated may
    /// still hold its clear value.
    func record(from columns: [String: DatabaseValue], table: StoreSchema.Table) throws -> StoreRecord {
        var record: StoreRecord = [:]
        let migrating = migrating(table.name)
        for field in table.fields where !field.sealed {
            record[field.name] = try StoreSQL.storeValue(columns[field.name] ?? .null, for: field, table: table.name)
        }
        let key = record[table.primaryKey] ?? .null
        for field in table.fields where field.sealed {
            let stored = columns[field.name] ?? .null
            guard case .blob(let sealed) = stored.storage else {
                if field.name == migrating {
                    record[field.name] = try StoreSQL.storeValue(stored, for: field, table: table.name)
                    continue
                }
                throw CofferError(.malformed, "\(table.name).\(field.name) of this row holds no sealed cell")
            }
            let context = try keys.context(
                table: table.name, column: field.name, primaryKey: key,
                bound: field.bind.map { ($0, record[$0] ?? .null) })
            record[field.name] = try keys.openCell(
                Array(sealed), context: context, table: table.name, column: field.name)
        }
        return record
    }

    func record(from row: Row, table: StoreSchema.Table) throws -> StoreRecord {
        try record(from: RecordStore.columns(row), table: table)
    }
}

extension RecordStore {
    /// The record whose primary key is `key`, its sealed fields opened, or nil.
    public func get(_ tableName: String, id key: StoreValue) throws -> StoreRecord? {
        try read { db, state in
            let table = try state.schema.table(tableName)
            let keyField = table.field(table.primaryKey)!
            let row = try Row.fetchOne(
                db, sql: "\(select(table)) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
                arguments: [try StoreSQL.databaseValue(key, for: keyField, table: table.name)])
            return try row.map { try state.record(from: $0, table: table) }
        }
    }

    /// Changes fields of the record `key` (a field set to `.null` becomes
    /// null; fields left out keep their value) and returns the record as it
    /// now is, or nil when there is none. Every sealed field is sealed again
    /// and every index recomputed, so a changed bound field keeps the row
    /// opening. The primary key does not change.
    @discardableResult
    public func update(_ tableName: String, id key: StoreValue, set changes: StoreRecord) throws -> StoreRecord? {
        try write { db, state in
            let table = try state.schema.table(tableName)
            for name in changes.keys where table.field(name) == nil {
                throw CofferError(.invalidArgument, "\(table.name) has no field \(name)")
            }
            if let changed = changes[table.primaryKey], changed != key {
                throw CofferError(
                    .invalidArgument, "the primary key \(table.primaryKey) does not change; put a new record")
            }
            let keyField = table.field(table.primaryKey)!
            guard
                let row = try Row.fetchOne(
                    db, sql: "\(select(table)) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
                    arguments: [try StoreSQL.databaseValue(key, for: keyField, table: table.name)])
            else { return nil }
            var record = try state.record(from: row, table: table)
            record.merge(changes) { $1 }
            let clear = table.fields.filter { !$0.sealed && $0.name != table.primaryKey }
            if !clear.isEmpty {
                try db.execute(
                    sql:
                        "UPDATE \(StoreSQL.quoted(table.name)) SET \(clear.map { StoreSQL.quoted($0.name) + " = ?" }.joined(separator: ", ")) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
                    arguments: StatementArguments(
                        try clear.map {
                            try StoreSQL.databaseValue(record[$0.name] ?? .null, for: $0, table: table.name)
                        }
                            + [try StoreSQL.databaseValue(key, for: keyField, table: table.name)]))
            }
            try state.writeSealed(record, key: key, table: table, db)
            return record
        }
    }

    /// Deletes the record `key`; false when there was none.
    @discardableResult
    public func delete(_ tableName: String, id key: StoreValue) throws -> Bool {
        try write { db, state in
            let table = try state.schema.table(tableName)
            let keyField = table.field(table.primaryKey)!
            try db.execute(
                sql: "DELETE FROM \(StoreSQL.quoted(table.name)) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
                arguments: [try StoreSQL.databaseValue(key, for: keyField, table: table.name)])
            return db.changesCount > 0
        }
    }

    func select(_ table: StoreSchema.Table) -> String {
        "SELECT \(table.fields.map { StoreSQL.quoted($0.name) }.joined(separator: ", ")) FROM \(StoreSQL.quoted(table.name))"
    }

    /// A row's columns by name (Sendable, unlike GRDB's `Row`).
    static func columns(_ row: Row) -> [String: DatabaseValue] {
        var columns: [String: DatabaseValue] = [:]
        for (name, value) in row { columns[name] = value }
        return columns
    }
}
