import Coffer
import Crypto
import Foundation
import GRDB

/// How a schema becomes tables (SQLite or PostgreSQL), and values become column values.
/// Every name is a validated plain identifier, and still quoted.
package enum StoreSQL {
    package static func quoted(_ name: String) -> String { "\"" + name + "\"" }

    /// The metadata table: format, store id, the sealed key ring, the
    /// sealed index roots, the current index version and the schema.
    package static let metaTable = "coffer_meta"

    /// The column holding each row's *life*: 16 random bytes chosen when
    /// the row is inserted and bound into every cell of it, so that no cell
    /// of a deleted record opens in a later record with the same primary
    /// key. A table gets it with its first sealed field (docs/store.md).
    package static let lifeColumn = "coffer_life"

    /// Whether `table`'s rows have a life column: it has a sealed field.
    static func hasLife(_ table: StoreSchema.Table) -> Bool { table.fields.contains(where: \.sealed) }

    /// The columns the store reads of a row: its fields, with `indexes` the
    /// index columns too, and its life when it has one.
    static func rowColumns(_ table: StoreSchema.Table, indexes: Bool) -> [String] {
        table.fields.flatMap { [$0.name] + (indexes ? $0.indexes.filter { $0.tokens == nil }.map(\.name) : []) }
            + (hasLife(table) ? [lifeColumn] : [])
    }

    static func createMeta(_ dialect: StoreDialect) -> String {
        "CREATE TABLE \(metaTable) (name TEXT PRIMARY KEY NOT NULL, value \(dialect.bytes) NOT NULL)\(dialect.strict)"
    }

    /// One table per schema table: clear fields in typed columns, sealed
    /// fields and index values as bytes, an SQL index on each blind index.
    static func create(_ table: StoreSchema.Table, _ dialect: StoreDialect) -> [String] {
        ["CREATE TABLE \(quoted(table.name)) (\(columns(table, dialect)))\(dialect.strict)"] + indexes(table)
            + (table.tenant.map {
                ["CREATE INDEX \(quoted(sideName("tenant", table.name, $0))) ON \(quoted(table.name)) (\(quoted($0)))"]
            } ?? [])
            + table.fields.flatMap(\.indexes).filter { $0.tokens != nil }.flatMap { tokenTable(table, $0, dialect) }
    }

    /// The side table of a token index: one row per distinct token of each
    /// record, (entry, key), found by entry and deleted by key.
    static func tokenTable(_ table: StoreSchema.Table, _ index: StoreSchema.Index, _ dialect: StoreDialect) -> [String]
    {
        let name = tokenTableName(table.name, index.name)
        let key = dialect == .sqlite ? "ANY" : dialect.type(of: table.field(table.primaryKey)!.type)
        let rowid = dialect == .sqlite ? " STRICT, WITHOUT ROWID" : ""
        return [
            "CREATE TABLE \(quoted(name)) (entry \(dialect.bytes) NOT NULL, key \(key) NOT NULL, PRIMARY KEY (entry, key))\(rowid)",
            "CREATE INDEX \(quoted(sideName("tokens_key", table.name, index.name))) ON \(quoted(name)) (key)",
        ]
    }

    package static func tokenTableName(_ table: String, _ index: String) -> String { sideName("tokens", table, index) }

    /// The name of a table or SQL index the store keeps beside `table` for
    /// its blind index `index`: `coffer_KIND_` and 20 hex digits of
    /// SHA-256(KIND, table, index, each length-prefixed). No two (table,
    /// index) pairs share one, as `coffer_tokens_a_b_c` once did, and it
    /// fits PostgreSQL's 63 bytes whatever the names' lengths.
    static func sideName(_ kind: String, _ table: String, _ index: String) -> String {
        var hash = SHA256()
        for part in [kind, table, index] {
            withUnsafeBytes(of: UInt32(part.utf8.count).bigEndian) { hash.update(bufferPointer: $0) }
            hash.update(data: Array(part.utf8))
        }
        return "coffer_\(kind)_" + Hex.encode(Array(hash.finalize().prefix(10)))
    }

    /// The column definitions of `table`; those named in `any` take any
    /// value (a field being migrated holds clear and sealed values; SQLite only).
    static func columns(_ table: StoreSchema.Table, _ dialect: StoreDialect, any: Set<String> = []) -> String {
        var columns: [String] = []
        for field in table.fields {
            let type: String
            if any.contains(field.name) {
                type = "ANY"
            } else if field.sealed {
                type = dialect.bytes
            } else {
                type = dialect.type(of: field.type)
            }
            // An integer key the store assigns is never given again after
            // its record is deleted: SQLite's AUTOINCREMENT and a
            // PostgreSQL identity keep the highest ever used.
            var key = ""
            if field.name == table.primaryKey {
                switch (field.type == .integer, dialect) {
                case (true, .sqlite): key = " PRIMARY KEY AUTOINCREMENT NOT NULL"
                case (true, .postgres): key = " GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
                default: key = " PRIMARY KEY NOT NULL"
                }
            }
            columns.append(quoted(field.name) + " " + type + key)
            for index in field.indexes where index.tokens == nil {
                columns.append(quoted(index.name) + " " + dialect.bytes)
            }
        }
        columns.append(quoted(lifeColumn) + " " + dialect.bytes)
        return columns.joined(separator: ", ")
    }

    /// An SQL index on each blind index column of `table`.
    static func indexes(_ table: StoreSchema.Table, only names: Set<String>? = nil) -> [String] {
        table.fields.flatMap(\.indexes).filter { $0.tokens == nil && names?.contains($0.name) ?? true }.map { index in
            "CREATE INDEX \(quoted(sideName("index", table.name, index.name))) ON \(quoted(table.name)) (\(quoted(index.name)))"
        }
    }

    /// A clear value as the column's value; its type must be the field's.
    static func databaseValue(_ value: StoreValue, for field: StoreSchema.Field, table: String) throws -> DatabaseValue
    {
        guard value.type == field.type || value.isNull else {
            throw CofferError(.invalidArgument, "\(table).\(field.name) holds \(field.type), not \(value.kindName)")
        }
        switch value.storage {
        case .null: return .null
        case .text(let text):
            // SQLite's tools and GRDB end text at a NUL, and PostgreSQL refuses it.
            guard !text.utf8.contains(0) else {
                throw CofferError(
                    .invalidArgument,
                    "\(table).\(field.name) is a clear text column, which cannot hold a NUL character (seal the field, or store bytes)"
                )
            }
            return text.databaseValue
        case .integer(let number): return number.databaseValue
        case .double(let number):
            guard number.isFinite else {
                throw CofferError(.invalidArgument, "\(table).\(field.name) holds finite numbers only")
            }
            return number.databaseValue
        case .bytes(let bytes): return Data(bytes).databaseValue
        }
    }

    /// A clear column's value back; anything the field cannot hold is `malformed`.
    static func storeValue(_ value: DatabaseValue, for field: StoreSchema.Field, table: String) throws -> StoreValue {
        let storage: StoreValue.Storage =
            switch value.storage {
            case .null: .null
            case .int64(let number): .integer(number)
            case .double(let number): .double(number)
            case .string(let text): .text(text)
            case .blob(let data): .bytes(Array(data))
            }
        if storage == .null { return .null }
        guard field.type.holds(storage) else {
            throw CofferError(.malformed, "\(table).\(field.name) holds a value of the wrong kind for \(field.type)")
        }
        return StoreValue(field.type, storage)
    }
}

/// The SQL a backend speaks, where SQLite and PostgreSQL differ.
package enum StoreDialect: Sendable {
    case sqlite, postgres

    var bytes: String { self == .sqlite ? "BLOB" : "BYTEA" }
    var strict: String { self == .sqlite ? " STRICT" : "" }

    func type(of field: StoreSchema.FieldType) -> String { field.column(self) }
}
