import Coffer
import Foundation
import GRDB

/// How a schema becomes tables (SQLite or PostgreSQL), and values become column values.
/// Every name is a validated plain identifier, and still quoted.
package enum StoreSQL {
    package static func quoted(_ name: String) -> String { "\"" + name + "\"" }

    /// The metadata table: format, store id, the sealed key ring, the
    /// sealed index roots, the current index version and the schema.
    package static let metaTable = "coffer_meta"

    static func createMeta(_ dialect: StoreDialect) -> String {
        "CREATE TABLE \(metaTable) (name TEXT PRIMARY KEY NOT NULL, value \(dialect.bytes) NOT NULL)\(dialect.strict)"
    }

    /// One table per schema table: clear fields in typed columns, sealed
    /// fields and index values as bytes, an SQL index on each blind index.
    static func create(_ table: StoreSchema.Table, _ dialect: StoreDialect) -> [String] {
        ["CREATE TABLE \(quoted(table.name)) (\(columns(table, dialect)))\(dialect.strict)"] + indexes(table)
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
            "CREATE INDEX \(quoted(name + "_key")) ON \(quoted(name)) (key)",
        ]
    }

    static func tokenTableName(_ table: String, _ index: String) -> String { "coffer_tokens_\(table)_\(index)" }

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
            let key = field.name == table.primaryKey ? " PRIMARY KEY NOT NULL" : ""
            columns.append(quoted(field.name) + " " + type + key)
            for index in field.indexes where index.tokens == nil {
                columns.append(quoted(index.name) + " " + dialect.bytes)
            }
        }
        return columns.joined(separator: ", ")
    }

    /// An SQL index on each blind index column of `table`.
    static func indexes(_ table: StoreSchema.Table, only names: Set<String>? = nil) -> [String] {
        table.fields.flatMap(\.indexes).filter { $0.tokens == nil && names?.contains($0.name) ?? true }.map { index in
            "CREATE INDEX \(quoted("coffer_\(table.name)_\(index.name)")) ON \(quoted(table.name)) (\(quoted(index.name)))"
        }
    }

    /// A clear value as the column's value; its kind must be the field's.
    static func databaseValue(_ value: StoreValue, for field: StoreSchema.Field, table: String) throws -> DatabaseValue
    {
        switch (value, field.type) {
        case (.null, _): return .null
        case (.text(let text), .text):
            // SQLite's tools and GRDB end text at a NUL, and PostgreSQL refuses it.
            guard !text.utf8.contains(0) else {
                throw CofferError(
                    .invalidArgument,
                    "\(table).\(field.name) is a clear text column, which cannot hold a NUL character (seal the field, or store bytes)"
                )
            }
            return text.databaseValue
        case (.integer(let number), .integer): return number.databaseValue
        case (.bytes(let bytes), .bytes): return Data(bytes).databaseValue
        default:
            throw CofferError(
                .invalidArgument, "\(table).\(field.name) holds \(field.type.rawValue), not \(value.kindName)")
        }
    }

    /// A clear column's value back; anything the field cannot hold is `malformed`.
    static func storeValue(_ value: DatabaseValue, for field: StoreSchema.Field, table: String) throws -> StoreValue {
        switch (value.storage, field.type) {
        case (.null, _): return .null
        case (.string(let text), .text): return .text(text)
        case (.int64(let number), .integer): return .integer(number)
        case (.blob(let data), .bytes): return .bytes(Array(data))
        default:
            throw CofferError(
                .malformed, "\(table).\(field.name) holds a value of the wrong kind for \(field.type.rawValue)")
        }
    }
}

extension StoreValue {
    var kindName: String {
        switch self {
        case .text: "text"
        case .integer: "integer"
        case .bytes: "bytes"
        case .null: "null"
        }
    }
}

/// The SQL a backend speaks, where SQLite and PostgreSQL differ.
package enum StoreDialect: Sendable {
    case sqlite, postgres

    var bytes: String { self == .sqlite ? "BLOB" : "BYTEA" }
    var strict: String { self == .sqlite ? " STRICT" : "" }

    func type(of field: StoreSchema.FieldType) -> String {
        switch field {
        case .text: "TEXT"
        case .integer: self == .sqlite ? "INTEGER" : "BIGINT"
        case .bytes: bytes
        }
    }
}
