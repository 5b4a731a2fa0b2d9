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
    /// their primary keys in order: the way to load many. The cells are
    /// sealed on every core; each row is one `INSERT`.
    @discardableResult
    public func put(contentsOf records: [StoreRecord], into tableName: String) throws -> [StoreValue] {
        try write { work in try put(contentsOf: records, into: tableName, work) }
    }

    func put(contentsOf records: [StoreRecord], into tableName: String, _ work: StoreWork)
        throws -> [StoreValue]
    {
        let (db, state) = (work.db, work.state)
        let table = try state.schema.table(tableName)
        work.changes?.reserve(table.name, db)
        let keys = try state.primaryKeys(for: try Self.checked(records, table: table), table: table, db)
        let sealer = try RowSealer(
            keys: state.keys, table: table, fields: table.fields.filter(\.sealed),
            version: state.keys.currentIndexVersion, state: state)
        try put(
            contentsOf: records, keys: keys, clear: table.fields.filter { !$0.sealed }, sealer: sealer, table: table,
            work)
        return keys
    }
}

extension StoreState {
    /// The records' primary keys: given, or for an integer key left out,
    /// one past the largest in the table and the batch (what SQLite would
    /// pick), so that every cell can be sealed before its row is written.
    func primaryKeys(for records: [StoreRecord], table: StoreSchema.Table, _ db: any StoreConnection) throws
        -> [StoreValue]
    {
        let (keys, last) = try Self.assignKeys(to: records, table: table) {
            try db.lockKeys(of: table.name)
            return try Self.highestKey(table, db)
        }
        if let last, db.dialect == .postgres {
            // PostgreSQL's identity does not move for keys given in the
            // INSERT: it is set to the last one here (SQLite's
            // AUTOINCREMENT follows every insert by itself).
            _ = try db.rows(
                "SELECT setval(seq, ?) FROM (SELECT pg_get_serial_sequence(?, ?) AS seq) s WHERE seq IS NOT NULL",
                [last.databaseValue, StoreSQL.quoted(table.name).databaseValue, table.primaryKey.databaseValue])
        }
        return keys
    }

    /// The keys of `records`: each one's own, or for an integer key left
    /// out, the next past `highest()` (asked once, only if needed) and
    /// every key the records give; also the last key assigned.
    static func assignKeys(
        to records: [StoreRecord], table: StoreSchema.Table, highest: () throws -> Int64
    ) throws -> (keys: [StoreValue], last: Int64?) {
        let keyField = table.field(table.primaryKey)!
        var next: Int64?
        var keys: [StoreValue] = []
        keys.reserveCapacity(records.count)
        for record in records {
            if let key = record[table.primaryKey], key != .null {
                keys.append(key)
                continue
            }
            guard keyField.type == .integer else {
                throw CofferError(.invalidArgument, "\(table.name) needs its primary key \(table.primaryKey)")
            }
            if next == nil {
                let given =
                    records.compactMap { $0[table.primaryKey]?.integerValue }.max() ?? 0
                let floor = max(try highest(), given)
                guard floor < Int64.max else {
                    throw CofferError(.refused, "\(table.name) has used every integer primary key")
                }
                next = floor + 1
            }
            keys.append(.integer(next!))
            next! += 1
        }
        return (keys, next.map { $0 - 1 })
    }

    /// The highest integer key the table holds or ever held (0 when none).
    static func highestKey(_ table: StoreSchema.Table, _ db: any StoreConnection) throws -> Int64 {
        let stored =
            try db.integer("SELECT max(\(StoreSQL.quoted(table.primaryKey))) FROM \(StoreSQL.quoted(table.name))") ?? 0
        return max(stored, try highestKeyEverUsed(table, db) ?? 0)
    }

    /// The highest integer key the table ever held, deleted rows' too, when
    /// it keeps one (a table the store made; an adopted one may not).
    static func highestKeyEverUsed(_ table: StoreSchema.Table, _ db: any StoreConnection) throws -> Int64? {
        switch db.dialect {
        case .sqlite:
            guard try db.tableExists("sqlite_sequence") else { return nil }
            return try db.integer("SELECT seq FROM sqlite_sequence WHERE name = ?", [table.name.databaseValue])
        case .postgres:
            return try db.integer(
                "SELECT pg_sequence_last_value(seq::regclass) FROM (SELECT pg_get_serial_sequence(?, ?) AS seq) s WHERE seq IS NOT NULL",
                [StoreSQL.quoted(table.name).databaseValue, table.primaryKey.databaseValue])
        }
    }

    /// Seals the sealed fields and computes the index values of the row
    /// `key`, stored as `row` (whose life they keep; a new one when it is
    /// null); the record set's change goes to `changes`.
    func writeSealed(
        _ record: StoreRecord, key: StoreValue, row: [String: DatabaseValue], stored: [String: DatabaseValue],
        table: StoreSchema.Table, _ db: any StoreConnection, changes: RecordSetChanges?
    ) throws {
        guard StoreSQL.hasLife(table) else { return }
        let life = try StoreKeys.life(of: row, table: table.name, orNew: true)
        let sealed = try sealedRow(
            record, key: key, life: life, table: table, fields: table.fields.filter(\.sealed))
        try writeTokens(sealed.tokens, key: key, table: table, db, replacing: true)
        guard !sealed.columns.isEmpty else { return }
        changes?.replace(
            try element(of: stored, table: table),
            with: try element(of: stored.merging(sealed.columns) { $1 }, table: table), in: table.name)
        let names = sealed.columns.keys.sorted()
        let keyField = table.field(table.primaryKey)!
        try db.execute(
            "UPDATE \(StoreSQL.quoted(table.name)) SET \(names.map { StoreSQL.quoted($0) + " = ?" }.joined(separator: ", ")) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
            names.map { sealed.columns[$0]! } + [try StoreSQL.databaseValue(key, for: keyField, table: table.name)])
    }

    /// A row as a record: clear columns read, sealed cells opened with the
    /// row's own primary key and bound fields. A field being migrated may
    /// still hold its clear value.
    func record(from columns: [String: DatabaseValue], table: StoreSchema.Table, opening only: Set<String>? = nil)
        throws -> StoreRecord
    {
        var record: StoreRecord = [:]
        for field in table.fields where !field.sealed {
            record[field.name] = try StoreSQL.storeValue(columns[field.name] ?? .null, for: field, table: table.name)
        }
        let key = record[table.primaryKey] ?? .null
        var life: [UInt8]?  // read once, when a cell is opened
        for field in table.fields where field.sealed && only?.contains(field.name) != false {
            let stored = columns[field.name] ?? .null
            if let clear = try unsealed(stored, field: field, table: table) {
                record[field.name] = clear
                continue
            }
            guard case .blob(let sealed) = stored.storage else {
                throw CofferError(.malformed, "\(table.name).\(field.name) of this row holds no sealed cell")
            }
            let context = try CellContext(storeID: keys.storeID, table: table.name, field: field).bytes(
                key: key,
                life: try life
                    ?? {
                        life = try StoreKeys.life(of: columns, table: table.name)
                        return life!
                    }(),
                record: record)
            let value = try keys.openCell(
                Array(sealed), contextBytes: context, table: table.name, column: field.name)
            guard value.isNull || value.type == field.type else {
                throw CofferError(
                    .malformed, "the sealed \(table.name).\(field.name) of this row holds \(value.kindName)")
            }
            record[field.name] = value
        }
        return record
    }
}

extension RecordStore {
    /// The record whose primary key is `key`, its sealed fields opened, or nil.
    public func get(_ tableName: String, id key: StoreValue) throws -> StoreRecord? {
        try read { work in try get(tableName, id: key, work) }
    }

    func get(_ tableName: String, id key: StoreValue, _ work: StoreWork) throws
        -> StoreRecord?
    {
        let (db, state) = (work.db, work.state)
        let table = try state.schema.table(tableName)
        let keyField = table.field(table.primaryKey)!
        let row = try db.rows(
            "\(select(table)) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
            [try StoreSQL.databaseValue(key, for: keyField, table: table.name)]
        ).first
        return try row.map { try state.record(from: $0, table: table) }
    }

    /// Changes fields of the record `key` (a field set to `.null` becomes
    /// null; fields left out keep their value) and returns the record as it
    /// now is, or nil when there is none. Every sealed field is sealed again
    /// under a new life of the record, and every index recomputed, so a
    /// changed bound field keeps the row opening and no cell of an earlier
    /// version opens beside the new ones. The primary key does not change.
    @discardableResult
    public func update(_ tableName: String, id key: StoreValue, set changes: StoreRecord) throws -> StoreRecord? {
        let updated = try write { work in try update(tableName, id: key, set: changes, work) }
        if updated != nil { clearResidue() }
        return updated
    }

    func update(
        _ tableName: String, id key: StoreValue, set changes: StoreRecord, _ work: StoreWork
    ) throws -> StoreRecord? {
        let (db, state) = (work.db, work.state)
        let table = try state.schema.table(tableName)
        for name in changes.keys where table.field(name) == nil {
            throw CofferError(.invalidArgument, "\(table.name) has no field \(name)")
        }
        if let changed = changes[table.primaryKey], changed != key {
            throw CofferError(
                .invalidArgument, "the primary key \(table.primaryKey) does not change; put a new record")
        }
        work.changes?.reserve(table.name, db)
        let keyField = table.field(table.primaryKey)!
        guard
            let row = try db.rows(
                "\(select(table)) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
                [try StoreSQL.databaseValue(key, for: keyField, table: table.name)]
            ).first
        else { return nil }
        var record = try state.record(from: row, table: table)
        record.merge(changes) { $1 }
        let clear = table.fields.filter { !$0.sealed && $0.name != table.primaryKey }
        if !clear.isEmpty {
            try db.execute(
                "UPDATE \(StoreSQL.quoted(table.name)) SET \(clear.map { StoreSQL.quoted($0.name) + " = ?" }.joined(separator: ", ")) WHERE \(StoreSQL.quoted(table.primaryKey)) = ?",
                try clear.map { try StoreSQL.databaseValue(record[$0.name] ?? .null, for: $0, table: table.name) }
                    + [try StoreSQL.databaseValue(key, for: keyField, table: table.name)])
        }
        // A new life for the record (security review 4, H2): every sealed
        // cell is sealed again under it, so a cell of an earlier version put
        // back beside the newer ones opens no longer.
        try state.writeSealed(
            record, key: key, row: row.merging([StoreSQL.lifeColumn: .null]) { $1 }, stored: row, table: table, db,
            changes: work.changes)
        return record
    }

    /// Deletes the record `key`; false when there was none.
    @discardableResult
    public func delete(_ tableName: String, id key: StoreValue) throws -> Bool {
        let deleted = try write { work in try delete(tableName, id: key, work) }
        if deleted { clearResidue() }
        return deleted
    }

    /// After a delete or an update commits: the WAL still holds the page
    /// images written before it, with the old cells, so it is copied into
    /// the database (where `secure_delete` zeroed them) and emptied. When
    /// readers keep the checkpoint from finishing, the next write tries again.
    func clearResidue() {
        residue.withLock { $0 = true }
        guard (try? backend.checkpoint()) != nil else { return }
        residue.withLock { $0 = false }
    }

    func delete(_ tableName: String, id key: StoreValue, _ work: StoreWork) throws
        -> Bool
    {
        let (db, state) = (work.db, work.state)
        let table = try state.schema.table(tableName)
        let keyField = table.field(table.primaryKey)!
        work.changes?.reserve(table.name, db)
        // The row as it was, for its element in the record set.
        let removed = try db.rows(
            "DELETE FROM \(StoreSQL.quoted(table.name)) WHERE \(StoreSQL.quoted(table.primaryKey)) = ? RETURNING \(StoreSQL.rowColumns(table, indexes: false).map(StoreSQL.quoted).joined(separator: ", "))",
            [try StoreSQL.databaseValue(key, for: keyField, table: table.name)])
        for row in removed { work.changes?.remove(try state.element(of: row, table: table), from: table.name) }
        let deleted = !removed.isEmpty
        try state.writeTokens(
            Dictionary(uniqueKeysWithValues: table.tokenIndexes.map { ($0.index.name, []) }), key: key,
            table: table,
            db, replacing: true)
        return deleted
    }

    func select(_ table: StoreSchema.Table) -> String {
        "SELECT \(StoreSQL.rowColumns(table, indexes: false).map(StoreSQL.quoted).joined(separator: ", ")) FROM \(StoreSQL.quoted(table.name))"
    }
}
