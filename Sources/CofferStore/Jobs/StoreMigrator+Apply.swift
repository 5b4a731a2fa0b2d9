import Coffer
import Foundation
import GRDB

extension StoreState {
    /// Makes `change`'s tables, columns, SQL indexes and side tables in
    /// `db`, takes its schema, and fills the new sealed fields and indexes
    /// of the rows already stored: all in the caller's transaction, the
    /// record set's change in `changes`.
    mutating func apply(_ change: StoreSchemaChange, _ db: any StoreConnection, changes: RecordSetChanges) throws {
        let dialect = db.dialect
        var newTables = Set<String>()
        var newFields = Set<[String]>()
        for step in change.steps {
            switch step {
            case .table(let name):
                newTables.insert(name)
                let table = try change.schema.table(name)
                for statement in StoreSQL.create(table, dialect) { try db.execute(statement) }
                if table.tenant != nil { try db.execute(TenantKeys.createTable(dialect)) }
                if recordSet != nil { try RecordSetDigest.start([name], db, keys: keys) }
                if recordSet != nil, table.tenant != nil, !schema.hasTenants, !newTables.contains(TenantKeys.table) {
                    // The first table kept per tenant: its key rows are counted from now on.
                    newTables.insert(TenantKeys.table)
                    try RecordSetDigest.start([TenantKeys.table], db, keys: keys)
                }
            case .field(let tableName, let fieldName) where !newTables.contains(tableName):
                newFields.insert([tableName, fieldName])
                let table = try change.schema.table(tableName)
                let field = table.field(fieldName)!
                let type = field.sealed ? dialect.bytes : dialect.type(of: field.type)
                try db.execute(
                    "ALTER TABLE \(StoreSQL.quoted(table.name)) ADD COLUMN \(StoreSQL.quoted(field.name)) \(type)")
                try Self.addStorage(for: field.indexes, of: table, db)
                if field.sealed { try Self.addLife(to: table, db) }
            case .index(let tableName, let fieldName, let indexName)
            where !newTables.contains(tableName) && !newFields.contains([tableName, fieldName]):
                let table = try change.schema.table(tableName)
                let index = table.field(fieldName)!.indexes.first { $0.name == indexName }!
                try Self.addStorage(for: [index], of: table, db)
            default: break
            }
        }
        schema = change.schema
        // New sealed fields first (sealed null), then the fields with a new
        // index (opened, sealed again, indexed), none of them twice.
        var unfilled = newFields.filter { pair in
            change.schema.tables.first { $0.name == pair[0] }?.field(pair[1])?.sealed == true
        }
        var filled = Set<[String]>()
        for pair in unfilled.sorted(by: { $0.joined(separator: ".") < $1.joined(separator: ".") }) {
            unfilled.remove(pair)
            try fill(table: pair[0], field: pair[1], skipping: unfilled.union([pair]), db, changes: changes)
            filled.insert(pair)
        }
        for step in change.steps {
            guard case .index(let table, let field, _) = step, !newTables.contains(table),
                filled.insert([table, field]).inserted
            else { continue }
            try fill(table: table, field: field, skipping: [], db, changes: changes)
        }
    }

    /// The columns, SQL indexes and side tables of `indexes`.
    static func addStorage(for indexes: [StoreSchema.Index], of table: StoreSchema.Table, _ db: any StoreConnection)
        throws
    {
        let columns = indexes.filter { $0.tokens == nil }.map(\.name)
        for name in columns {
            try db.execute(
                "ALTER TABLE \(StoreSQL.quoted(table.name)) ADD COLUMN \(StoreSQL.quoted(name)) \(db.dialect.bytes)")
        }
        for statement in StoreSQL.indexes(table, only: Set(columns)) { try db.execute(statement) }
        for index in indexes where index.tokens != nil {
            for statement in StoreSQL.tokenTable(table, index, db.dialect) { try db.execute(statement) }
        }
    }

    /// The life column, for a table adopted without one.
    static func addLife(to table: StoreSchema.Table, _ db: any StoreConnection) throws {
        let column = StoreSQL.quoted(StoreSQL.lifeColumn)
        if db.dialect == .postgres {
            try db.execute("ALTER TABLE \(StoreSQL.quoted(table.name)) ADD COLUMN IF NOT EXISTS \(column) BYTEA")
            return
        }
        let present =
            try db.integer(
                "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?",
                [table.name.databaseValue, StoreSQL.lifeColumn.databaseValue]) == 1
        if !present { try db.execute("ALTER TABLE \(StoreSQL.quoted(table.name)) ADD COLUMN \(column) BLOB") }
    }

    /// Seals `field` of every stored row of `table` again (null where it is
    /// new: then it is in `skipping`) with all its indexes, 500 rows at a
    /// time in primary key order; the sealed fields in `skipping` are new
    /// and not filled yet, so not opened.
    func fill(
        table tableName: String, field fieldName: String, skipping: Set<[String]>, _ db: any StoreConnection,
        changes: RecordSetChanges
    ) throws {
        let table = try schema.table(tableName)
        let field = table.field(fieldName)!
        let opening = Set(
            table.fields.filter { $0.sealed && !skipping.contains([tableName, $0.name]) }.map(\.name))
        let keyField = table.field(table.primaryKey)!
        let order = StoreSQL.quoted(table.primaryKey)
        let select =
            "SELECT \(StoreSQL.rowColumns(table, indexes: false).map(StoreSQL.quoted).joined(separator: ", ")) FROM \(StoreSQL.quoted(table.name))"
        var after: DatabaseValue?
        while true {
            let rows =
                try after.map { try db.rows("\(select) WHERE \(order) > ? ORDER BY \(order) LIMIT 500", [$0]) }
                ?? db.rows("\(select) ORDER BY \(order) LIMIT 500")
            guard let last = rows.last else { return }
            after = last[table.primaryKey] ?? .null
            for row in rows {
                let record = try self.record(from: row, table: table, opening: opening, db)
                let key = record[table.primaryKey] ?? .null
                let sealed = try sealedRow(
                    record, key: key, life: try StoreKeys.life(of: row, table: table.name, orNew: true),
                    table: table, fields: [field], db, changes: changes)
                let names = sealed.columns.keys.sorted()
                try db.execute(
                    "UPDATE \(StoreSQL.quoted(table.name)) SET \(names.map { StoreSQL.quoted($0) + " = ?" }.joined(separator: ", ")) WHERE \(order) = ?",
                    names.map { sealed.columns[$0]! } + [
                        try StoreSQL.databaseValue(key, for: keyField, table: table.name)
                    ])
                try writeTokens(sealed.tokens, key: key, table: table, db, replacing: true)
                changes.replace(
                    try element(of: row, table: table),
                    with: try element(of: row.merging(sealed.columns) { $1 }, table: table), in: table.name)
            }
        }
    }
}
