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
        guard !records.isEmpty else { return keys }
        let clear = table.fields.filter { !$0.sealed }
        // Each record's sealer: the store's one for a table without
        // tenants; for one kept per tenant, its tenant's, whose key rows
        // are read (and the missing ones made) here, each opened and its
        // sealer made on the core that first seals one of its records.
        let first: RowSealer
        let sealer: @Sendable (Int) throws -> RowSealer
        if let tenant = table.tenant {
            let write = try state.tenantsWriting(
                records.map { $0[tenant] ?? .null }, to: table, db, changes: work.changes)
            let sealers = TenantSealers(write, state: state, table: table)
            first = try sealers.sealer(write.slots[0])
            sealer = { try sealers.sealer(write.slots[$0]) }
        } else {
            let only = try RowSealer(
                keys: state.keys, table: table, fields: table.fields.filter(\.sealed),
                version: state.keys.currentIndexVersion, state: state)
            (first, sealer) = (only, { _ in only })
        }
        try Self.pipeline(
            Array(records.indices), chunk: 256,
            map: { try InsertRow(records[$0], key: keys[$0], table: table, clear: clear, sealer: sealer($0)) },
            consume: { _, rows in try insert(rows, clear: clear, sealer: first, table: table, work) })
        return keys
    }
}

extension StoreState {
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
            record, key: key, life: life, table: table, fields: table.fields.filter(\.sealed), db, changes: changes)
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
    ///
    /// A table kept per tenant opens its cells under the row's tenant's
    /// keys, read through `db` (a job working without one refuses it).
    func record(
        from columns: [String: DatabaseValue], table: StoreSchema.Table, opening only: Set<String>? = nil,
        _ db: (any StoreConnection)?, resolved: ResolvedTenantKeys? = nil
    ) throws -> StoreRecord {
        var record: StoreRecord = [:]
        for field in table.fields where !field.sealed {
            record[field.name] = try StoreSQL.storeValue(columns[field.name] ?? .null, for: field, table: table.name)
        }
        let key = record[table.primaryKey] ?? .null
        var life: [UInt8]?  // read once, when a cell is opened
        var cellKeys: StoreKeys?  // the tenant's, when a cell is opened
        for field in table.fields where field.sealed && only?.contains(field.name) != false {
            let stored = columns[field.name] ?? .null
            if let clear = try unsealed(stored, field: field, table: table) {
                record[field.name] = clear
                continue
            }
            guard case .blob(let sealed) = stored.storage else {
                throw CofferError(.malformed, "\(table.name).\(field.name) of this row holds no sealed cell")
            }
            if cellKeys == nil {
                let tenant = table.tenant.map { record[$0] ?? .null }
                if let resolved, let tenant {
                    cellKeys = try resolved[tenant.encoded]?.get()
                } else {
                    cellKeys = try keys(for: table, tenant: tenant, db)
                }
                guard cellKeys != nil else { throw TenantKeys.missing(tenant ?? .null, table: table.name) }
            }
            let context = try CellContext(storeID: keys.storeID, table: table, field: field).bytes(
                key: key,
                life: try life
                    ?? {
                        life = try StoreKeys.life(of: columns, table: table.name)
                        return life!
                    }(),
                record: record)
            let value = try cellKeys!.openCell(
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
        return try row.map { try state.record(from: $0, table: table, db) }
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
        var record = try state.record(from: row, table: table, db)
        if let tenant = table.tenant, let changed = changes[tenant], changed != record[tenant] {
            throw CofferError(
                .invalidArgument,
                "a record's tenant (\(table.name).\(tenant)) does not change: its cells are under its tenant's keys; put a new record for the other tenant and delete this one"
            )
        }
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
