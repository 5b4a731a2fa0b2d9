import Coffer
import Foundation

/// Records as JSON, as `coffer store` reads and writes them (docs/store.md,
/// "Records as JSON"): one flat object per record, each field's value in
/// its type's JSON form (``StoreSchema/FieldType``) — text a string, an
/// integer an integer, a double a number, a date an ISO 8601 string with
/// milliseconds (milliseconds since 1970 are taken too), bytes a base64
/// string, null null.
///
/// ```swift
/// let record = try RecordJSON.record(#"{"id":1,"title":"Lunch","created":"2026-11-28T12:00:00.000Z"}"#, table: notes)
/// print(RecordJSON.line(record, table: notes))
/// ```
///
/// For a whole file of JSON lines, read on every core while the store
/// unlocks, see ``RecordJSONLines``.
public enum RecordJSON {
    /// One record from a JSON object; a field the table lacks, a field
    /// given twice or a value its type does not take is an error naming it.
    public static func record(_ text: some StringProtocol, table: StoreSchema.Table) throws -> StoreRecord {
        var text = String(text)
        return try text.withUTF8 { try record(utf8: $0, table: table) }
    }

    /// One record from a JSON object's UTF-8 bytes (checked to be UTF-8).
    public static func record(utf8 bytes: UnsafeBufferPointer<UInt8>, table: StoreSchema.Table) throws -> StoreRecord {
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw CofferError(.malformed, "the record is not UTF-8 JSON")
        }
        return try record(try RecordJSONParser.object(bytes), table: table)
    }

    /// A JSON object parsed, not yet read as a record of a table: so that a
    /// malformed object is refused before a store is unlocked.
    public struct Object: Sendable {
        let parsed: RecordJSONParser.Parsed
    }

    /// Parses a JSON object's UTF-8 bytes (checked to be UTF-8).
    public static func object(utf8 bytes: some Collection<UInt8>) throws -> Object {
        let bytes = Array(bytes)
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw CofferError(.malformed, "the record is not UTF-8 JSON")
        }
        return Object(parsed: try bytes.withUnsafeBufferPointer { try RecordJSONParser.object($0) })
    }

    /// The record `object` gives `table`.
    public static func record(_ object: Object, table: StoreSchema.Table) throws -> StoreRecord {
        try record(object.parsed, table: table)
    }

    /// A record as one line of JSON (no newline), fields in schema order;
    /// a value not of its field's type is written as null.
    public static func line(_ record: StoreRecord, table: StoreSchema.Table) -> String {
        let parts = table.fields.map { field -> String in
            quoted(field.name) + ":" + (field.type.json(record[field.name] ?? .null) ?? "null")
        }
        return "{" + parts.joined(separator: ",") + "}"
    }

    /// A value given as text (a command-line argument, a URL's query), read
    /// as the field's type: an integer, a double, a date (ISO 8601 or
    /// milliseconds) or base64 bytes as JSON writes them, text as it is.
    public static func value(argument text: String, field: StoreSchema.Field, table: String) throws -> StoreValue {
        guard let value = field.type.value(argument: text) else { throw mismatch(field, table) }
        return value
    }

    /// A JSON string: quotes, backslashes and control characters escaped.
    public static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u00" + String(repeating: "0", count: 2 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    static func value(_ json: StoreSchema.FieldType.JSONScalar, field: StoreSchema.Field, table: String) throws
        -> StoreValue
    {
        guard let value = field.type.value(json: json) else { throw mismatch(field, table) }
        return value
    }

    static func mismatch(_ field: StoreSchema.Field, _ table: String) -> CofferError {
        CofferError(.invalidArgument, "\(table).\(field.name) takes \(field.type.jsonShape) or null")
    }

    /// A parsed object as one record of `table`.
    static func record(_ parsed: RecordJSONParser.Parsed, table: StoreSchema.Table) throws -> StoreRecord {
        switch parsed {
        case .other(let name):
            guard let field = table.field(name) else {
                throw CofferError(.invalidArgument, "\(table.name) has no field \(name)")
            }
            throw mismatch(field, table.name)
        case .fields(let fields):
            var record = StoreRecord(minimumCapacity: fields.count)
            for (name, json) in fields {
                guard let field = table.field(name) else {
                    throw CofferError(.invalidArgument, "\(table.name) has no field \(name)")
                }
                guard record.updateValue(try value(json, field: field, table: table.name), forKey: name) == nil else {
                    throw CofferError(.invalidArgument, "\(table.name).\(name) is given twice")
                }
            }
            return record
        }
    }
}
