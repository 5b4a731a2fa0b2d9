import Coffer
import Foundation
import GRDB

extension RecordStore {
    /// Makes the plain SQLite database at `path` a store without touching a
    /// row: `schema` must describe tables that exist, with every field a
    /// clear column of the same name and each table's primary key its SQL
    /// primary key. Seal fields afterwards with `migrate(_:field:bind:indexes:batchSize:progress:)`.
    public static func adopt(
        sqlite path: String, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt
    ) throws -> RecordStore {
        guard FileManager.default.fileExists(atPath: path) else {
            throw CofferError(.io, "there is no database at \(path) to adopt")
        }
        return try adopt(SQLiteBackend(path: path), schema: schema, secret: secret, kdf: kdf) { table, db in
            let columns = try db.rows("SELECT name, pk FROM pragma_table_info(?)", [table.name.databaseValue])
            guard !columns.isEmpty else {
                throw CofferError(.invalidArgument, "\(path) has no table \(table.name)")
            }
            let names = Set(columns.compactMap { $0["name"].flatMap(String.fromDatabaseValue) })
            for field in table.fields where !names.contains(field.name) {
                throw CofferError(.invalidArgument, "\(table.name) in \(path) has no column \(field.name)")
            }
            let keys = columns.filter { ($0["pk"].flatMap(Int.fromDatabaseValue) ?? 0) > 0 }
                .compactMap { $0["name"].flatMap(String.fromDatabaseValue) }
            guard keys == [table.primaryKey] else {
                throw CofferError(
                    .invalidArgument,
                    "\(table.name)'s primary key in \(path) is (\(keys.joined(separator: ", "))), not \(table.primaryKey)"
                )
            }
        }
    }

    /// Adopts the database of `backend`: `check` finds each table as the
    /// schema describes it; then the store's metadata is written beside
    /// the tables, in one transaction, no row touched.
    package static func adopt(
        _ backend: any StoreBackend, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF,
        rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard,
        check: (StoreSchema.Table, any StoreConnection) throws -> Void
    ) throws -> RecordStore {
        try schema.validate()
        for table in schema.tables {
            if table.tenant != nil {
                throw CofferError(
                    .invalidArgument,
                    "adopt takes the database as it is: \(table.name) names a tenant, whose rows would need keys made for them; adopt it without one, or copy its rows into a table kept per tenant"
                )
            }
            for field in table.fields where field.sealed {
                throw CofferError(
                    .invalidArgument,
                    "adopt takes the database as it is, every field clear: \(table.name).\(field.name) is marked sealed; seal it afterwards with migrate"
                )
            }
        }
        let state = try backend.write(exclusive: true) { db in
            guard try !db.tableExists(StoreSQL.metaTable) else {
                throw CofferError(.refused, "\(backend.location) is a Coffer store already")
            }
            for table in schema.tables { try check(table, db) }
            return try initialise(db, schema: schema, secret: secret, kdf: kdf)
        }
        try rollbackGuard?.reset(guardKey(state.keys.storeID), to: state.epoch)
        return RecordStore(state: state, backend: backend, rollbackGuard: rollbackGuard)
    }

    /// Seals the clear field `fieldName` of `tableName` in place, with
    /// the bound fields and blind indexes given, as a resumable job. From
    /// the moment it begins every write seals the field, and finds search
    /// it both through its indexes and, for rows not yet sealed, in the
    /// clear; at the end the WAL is emptied, and with `secure_delete` no
    /// page of the database keeps a clear value. Every type but bytes: in
    /// SQLite a clear bytes value and a sealed one look alike.
    /// Called again for a field it has sealed, with the same bound fields
    /// and indexes, it has nothing to do.
    @discardableResult
    public func migrate(
        _ tableName: String, field fieldName: String, bind: [String] = [], indexes: [StoreSchema.Index] = [],
        batchSize: Int = 1000, progress: (StoreProgress) throws -> Void = { _ in }
    ) throws -> StoreJobReport {
        if let done = try read({ work -> StoreSchema.Field? in
            let (db, state) = (work.db, work.state)
            return try StoreJob.fetch(db, keys: state.keys, where: path) == nil
                ? state.schema.table(tableName).field(fieldName) : nil
        }), done.sealed {
            // Run again after it ended (say, killed before it could report):
            // nothing to do when it was sealed the way asked.
            func same(_ index: StoreSchema.Index) -> String {
                "\(index.name) \(index.bits) \(index.transforms) \(index.with)"
            }
            guard done.bind == bind, done.indexes.map(same) == indexes.map(same) else {
                throw CofferError(
                    .refused, "\(tableName).\(fieldName) is sealed already, with other bound fields or indexes")
            }
            return StoreJobReport(kind: .migrate, rows: 0, changed: 0, resumed: false)
        }
        // A job killed after its last batch and before it ended has no table left.
        let same = { (job: StoreJob) in
            job.field == fieldName && (job.tables == [tableName] || job.tables.isEmpty)
        }
        let (job, resumed) = try begin(.migrate, same: same) { db, state in
            var schema = state.schema
            guard let t = schema.tables.firstIndex(where: { $0.name == tableName }) else {
                throw CofferError(.invalidArgument, "the store has no table \"\(tableName)\"")
            }
            guard let f = schema.tables[t].fields.firstIndex(where: { $0.name == fieldName }) else {
                throw CofferError(.invalidArgument, "\(tableName) has no field \(fieldName)")
            }
            let field = schema.tables[t].fields[f]
            guard !field.sealed else { throw CofferError(.refused, "\(tableName).\(fieldName) is sealed already") }
            guard field.type != .bytes else {
                throw CofferError(
                    .invalidArgument,
                    "\(tableName).\(fieldName) holds bytes, which cannot be sealed in place (a clear and a sealed value are both BLOBs); copy them into a new sealed field"
                )
            }
            schema.tables[t].fields[f] = StoreSchema.Field(
                name: field.name, type: field.type, sealed: true, bind: bind, indexes: indexes)
            try schema.validate()
            try prepare(db, table: schema.tables[t], field: fieldName)
            state.schema = schema
            return StoreJob(kind: .migrate, tables: [tableName], field: fieldName, target: 0)
        }
        return try run(job, resumed: resumed, batchSize: batchSize, progress: progress) { state, table, row, resolved in
            guard let field = table.field(fieldName),
                try state.unsealed(row[field.name] ?? .null, field: field, table: table) != nil
            else { return SealedRow() }
            // A table kept per tenant: the cell is sealed under the row's
            // tenant's keys, read with the batch. A shredded tenant's kept
            // record has no keys to seal under: its clear value is removed,
            // as the shred removed the rest of it.
            var keys: StoreKeys?
            if let name = table.tenant, let tenantField = table.field(name) {
                let tenant = try StoreSQL.storeValue(row[name] ?? .null, for: tenantField, table: table.name)
                guard let found = resolved[tenant.encoded] else { throw TenantKeys.missing(tenant, table: table.name) }
                switch found {
                case .success(let opened): keys = opened
                case .failure(let error) where error.code == .keyNotFound:
                    var cleared = SealedRow()
                    cleared.columns[field.name] = .null
                    for index in field.indexes {
                        if index.tokens == nil {
                            cleared.columns[index.name] = .null
                        } else {
                            cleared.tokens[index.name] = []
                        }
                    }
                    return cleared
                case .failure(let error): throw error
                }
            }
            let record = try state.record(from: row, table: table, nil, resolved: resolved)
            return try state.sealedRow(
                record, key: record[table.primaryKey] ?? .null,
                life: try StoreKeys.life(of: row, table: table.name, orNew: true), table: table, fields: [field], nil,
                keys: keys)
        } finish: { _, _, _ in
        }
    }

    /// Makes `field`'s column able to hold clear and sealed values and adds
    /// its index columns: a STRICT table whose column is typed is rebuilt
    /// (in the job's first transaction) with the column as ANY.
    func prepare(_ db: any StoreConnection, table: StoreSchema.Table, field: String) throws {
        guard db.dialect == .sqlite else { return try preparePostgres(db, table: table, field: field) }
        let strict =
            try db.integer("SELECT strict FROM pragma_table_list WHERE name = ?", [table.name.databaseValue]) == 1
        let type =
            try db.value(
                "SELECT upper(type) FROM pragma_table_info(?) WHERE name = ?",
                [table.name.databaseValue, field.databaseValue]
            ).flatMap { String.fromDatabaseValue($0) } ?? ""
        let newIndexes = table.field(field)!.indexes
        for index in newIndexes where index.tokens != nil {
            for statement in StoreSQL.tokenTable(table, index, db.dialect) { try db.execute(statement) }
        }
        let fresh = Set(newIndexes.filter { $0.tokens == nil }.map(\.name))
        let hasLife =
            try db.integer(
                "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?",
                [table.name.databaseValue, StoreSQL.lifeColumn.databaseValue]) == 1
        guard strict && !["ANY", "BLOB"].contains(type) else {
            for name in fresh.sorted() + (hasLife ? [] : [StoreSQL.lifeColumn]) {
                try db.execute("ALTER TABLE \(StoreSQL.quoted(table.name)) ADD COLUMN \(StoreSQL.quoted(name)) BLOB")
            }
            for statement in StoreSQL.indexes(table, only: fresh) { try db.execute(statement) }
            return
        }
        let existing = Int(try db.integer("SELECT count(*) FROM pragma_table_info(?)", [table.name.databaseValue]) ?? 0)
        let described =
            table.fields.reduce(0) { $0 + 1 + $1.indexes.filter { $0.tokens == nil }.count } - fresh.count
            + (hasLife ? 1 : 0)
        guard existing == described else {
            throw CofferError(
                .refused,
                "\(table.name) is a STRICT table with columns the schema does not describe; its column \(field) cannot be made to hold sealed values in place"
            )
        }
        let kept =
            (table.fields.flatMap { [$0.name] + $0.indexes.filter { $0.tokens == nil }.map(\.name) }
            + (hasLife ? [StoreSQL.lifeColumn] : []))
            .filter { !fresh.contains($0) }
            .map(StoreSQL.quoted).joined(separator: ", ")
        let temporary = StoreSQL.quoted("coffer_rebuild_\(table.name)")
        try db.execute("CREATE TABLE \(temporary) (\(StoreSQL.columns(table, .sqlite, any: [field]))) STRICT")
        try db.execute("INSERT INTO \(temporary) (\(kept)) SELECT \(kept) FROM \(StoreSQL.quoted(table.name))")
        try db.execute("DROP TABLE \(StoreSQL.quoted(table.name))")
        try db.execute("ALTER TABLE \(temporary) RENAME TO \(StoreSQL.quoted(table.name))")
        for statement in StoreSQL.indexes(table) { try db.execute(statement) }
    }

    /// On PostgreSQL the column becomes BYTEA, each clear value rewritten
    /// as its ``StoreValue/encoded`` form in the same statement (one table
    /// rewrite, in the job's first transaction); the index columns, their
    /// SQL indexes and token tables are added.
    func preparePostgres(_ db: any StoreConnection, table: StoreSchema.Table, field name: String) throws {
        let field = table.field(name)!
        let column = StoreSQL.quoted(name)
        let encoded = field.type.postgresEncoded(column)
        try db.execute(
            "ALTER TABLE \(StoreSQL.quoted(table.name)) ALTER COLUMN \(column) TYPE BYTEA USING CASE WHEN \(column) IS NULL THEN NULL ELSE \(encoded) END"
        )
        try db.execute(
            "ALTER TABLE \(StoreSQL.quoted(table.name)) ADD COLUMN IF NOT EXISTS \(StoreSQL.quoted(StoreSQL.lifeColumn)) BYTEA"
        )
        let fresh = field.indexes.filter { $0.tokens == nil }.map(\.name)
        for index in fresh {
            try db.execute("ALTER TABLE \(StoreSQL.quoted(table.name)) ADD COLUMN \(StoreSQL.quoted(index)) BYTEA")
        }
        for statement in StoreSQL.indexes(table, only: Set(fresh)) { try db.execute(statement) }
        for index in field.indexes where index.tokens != nil {
            for statement in StoreSQL.tokenTable(table, index, db.dialect) { try db.execute(statement) }
        }
    }
}
