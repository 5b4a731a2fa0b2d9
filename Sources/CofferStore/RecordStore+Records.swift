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
        let table = try schema.table(tableName)
        for record in records {
            for name in record.keys where table.field(name) == nil {
                throw CofferError(.invalidArgument, "\(table.name) has no field \(name)")
            }
        }
        return try write { db in try records.map { try insert($0, table: table, db) } }
    }

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
        var assignments: [String] = []
        var values: [DatabaseValue] = []
        for field in table.fields where field.sealed {
            let context = try keys.context(
                table: table.name, column: field.name, primaryKey: key,
                bound: field.bind.map { ($0, record[$0] ?? .null) })
            assignments.append(StoreSQL.quoted(field.name) + " = ?")
            values.append(Data(try keys.sealCell(record[field.name] ?? .null, context: context)).databaseValue)
            for index in field.indexes {
                let inputs = [record[field.name] ?? .null] + index.with.map { record[$0] ?? .null }
                assignments.append(StoreSQL.quoted(index.name) + " = ?")
                if let texts = StoreKeys.indexInput(inputs, transforms: index.transforms) {
                    let value = try keys.indexValue(
                        texts, table: table.name, index: index.name, bits: index.bits, version: keys.currentIndexVersion
                    )
                    values.append(Data(value).databaseValue)
                } else {
                    values.append(.null)
                }
            }
        }
        guard !assignments.isEmpty else { return }
        let keyField = table.field(table.primaryKey)!
        try db.execute(
            sql:
                "UPDATE \(StoreSQL.quoted(table.name)) SET \(assignments.joined(separator: ", ")) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
            arguments: StatementArguments(values + [try StoreSQL.databaseValue(key, for: keyField, table: table.name)]))
    }

    /// The record whose primary key is `key`, its sealed fields opened, or nil.
    public func get(_ tableName: String, id key: StoreValue) throws -> StoreRecord? {
        let table = try schema.table(tableName)
        let keyField = table.field(table.primaryKey)!
        return try read { db in
            let row = try Row.fetchOne(
                db, sql: "\(select(table)) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
                arguments: [try StoreSQL.databaseValue(key, for: keyField, table: table.name)])
            return try row.map { try record(from: $0, table: table) }
        }
    }

    /// The records whose `field` equals `value`. A clear field is compared
    /// by SQL. A sealed field is found through its blind index: the index
    /// value for every active version picks candidates, which are opened;
    /// only records whose value equals `value` under the index's
    /// transforms are returned (exact equality when it has none), so index
    /// collisions never reach the caller.
    public func find(_ tableName: String, where fieldName: String, equals value: StoreValue) throws -> [StoreRecord] {
        let table = try schema.table(tableName)
        guard let field = table.field(fieldName) else {
            throw CofferError(.invalidArgument, "\(table.name) has no field \(fieldName)")
        }
        guard field.sealed else {
            return try read { db in
                try Row.fetchAll(
                    db, sql: "\(select(table)) WHERE \(StoreSQL.quoted(field.name)) IS ?",
                    arguments: [try StoreSQL.databaseValue(value, for: field, table: table.name)]
                ).map { try record(from: $0, table: table) }
            }
        }
        guard let index = field.indexes.first(where: { $0.with.isEmpty }) else {
            throw CofferError(
                .invalidArgument,
                "\(table.name).\(field.name) is sealed and has no single-field blind index: finding it would open every row; add an index to the schema"
            )
        }
        let wanted = StoreKeys.indexInput([value], transforms: index.transforms)
        let column = StoreSQL.quoted(index.name)
        return try read { db in
            let rows: [Row]
            if let wanted {
                let entries = try keys.indexVersions.map {
                    Data(
                        try keys.indexValue(wanted, table: table.name, index: index.name, bits: index.bits, version: $0)
                    )
                }
                rows = try Row.fetchAll(
                    db,
                    sql: "\(select(table)) WHERE \(column) IN (\(entries.map { _ in "?" }.joined(separator: ", ")))",
                    arguments: StatementArguments(entries))
            } else {
                rows = try Row.fetchAll(db, sql: "\(select(table)) WHERE \(column) IS NULL")
            }
            return try rows.map { try record(from: $0, table: table) }.filter { candidate in
                let stored = candidate[field.name] ?? .null
                guard let wanted else { return stored == value }
                return StoreKeys.indexInput([stored], transforms: index.transforms) == wanted
            }
        }
    }

    /// Changes fields of the record `key` (a field set to `.null` becomes
    /// null; fields left out keep their value) and returns the record as it
    /// now is, or nil when there is none. Every sealed field is sealed again
    /// and every index recomputed, so a changed bound field keeps the row
    /// opening. The primary key does not change.
    @discardableResult
    public func update(_ tableName: String, id key: StoreValue, set changes: StoreRecord) throws -> StoreRecord? {
        let table = try schema.table(tableName)
        for name in changes.keys where table.field(name) == nil {
            throw CofferError(.invalidArgument, "\(table.name) has no field \(name)")
        }
        if let changed = changes[table.primaryKey], changed != key {
            throw CofferError(.invalidArgument, "the primary key \(table.primaryKey) does not change; put a new record")
        }
        let keyField = table.field(table.primaryKey)!
        return try write { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "\(select(table)) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
                    arguments: [try StoreSQL.databaseValue(key, for: keyField, table: table.name)])
            else { return nil }
            var record = try self.record(from: row, table: table)
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
            try writeSealed(record, key: key, table: table, db)
            return record
        }
    }

    /// Deletes the record `key`; false when there was none.
    @discardableResult
    public func delete(_ tableName: String, id key: StoreValue) throws -> Bool {
        let table = try schema.table(tableName)
        let keyField = table.field(table.primaryKey)!
        return try write { db in
            try db.execute(
                sql: "DELETE FROM \(StoreSQL.quoted(table.name)) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
                arguments: [try StoreSQL.databaseValue(key, for: keyField, table: table.name)])
            return db.changesCount > 0
        }
    }

    func select(_ table: StoreSchema.Table) -> String {
        "SELECT \(table.fields.map { StoreSQL.quoted($0.name) }.joined(separator: ", ")) FROM \(StoreSQL.quoted(table.name))"
    }

    /// A row as a record: clear columns read, sealed cells opened with the
    /// row's own primary key and bound fields.
    func record(from row: Row, table: StoreSchema.Table) throws -> StoreRecord {
        try record(from: Self.columns(row), table: table)
    }

    /// A row's columns by name (Sendable, unlike GRDB's `Row`).
    static func columns(_ row: Row) -> [String: DatabaseValue] {
        var columns: [String: DatabaseValue] = [:]
        for (name, value) in row { columns[name] = value }
        return columns
    }

    func record(from columns: [String: DatabaseValue], table: StoreSchema.Table) throws -> StoreRecord {
        var record: StoreRecord = [:]
        for field in table.fields where !field.sealed {
            record[field.name] = try StoreSQL.storeValue(columns[field.name] ?? .null, for: field, table: table.name)
        }
        let key = record[table.primaryKey] ?? .null
        for field in table.fields where field.sealed {
            guard case .blob(let sealed) = (columns[field.name] ?? .null).storage else {
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

    // MARK: Transactions

    /// A write transaction; SQLite's errors become Coffer errors (a
    /// duplicate primary key is `refused`).
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try pool.write { try body($0) } } catch let error as DatabaseError {
            throw Self.coffer(error)
        }
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do { return try pool.read { try body($0) } } catch let error as DatabaseError {
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
