import Coffer
import CofferStore
import Foundation

/// Records as JSON for `coffer store`: text fields are JSON strings,
/// integers JSON integers, bytes base64 strings, null is null.
enum StoreJSON {
    /// A JSON value as `coffer store` reads it: strings, integers and null;
    /// anything else (true, 1.5, arrays, objects) is refused by the field
    /// (``JSONLines``).
    enum Scalar {
        case string(String)
        case integer(Int64)
        case null
    }

    static func value(_ json: Scalar, field: StoreSchema.Field, table: String) throws -> StoreValue {
        switch (json, field.type) {
        case (.null, _): return .null
        case (.string(let text), .text): return .text(text)
        case (.integer(let number), .integer): return .integer(number)
        case (.string(let text), .bytes):
            guard let bytes = Data(base64Encoded: text) else { throw mismatch(field, table) }
            return .bytes(Array(bytes))
        default: throw mismatch(field, table)
        }
    }

    static func mismatch(_ field: StoreSchema.Field, _ table: String) -> CofferError {
        let shape =
            switch field.type {
            case .text: "a JSON string"
            case .integer: "a JSON integer"
            case .bytes: "a base64 JSON string"
            }
        return CofferError(.invalidArgument, "\(table).\(field.name) takes \(shape) or null")
    }

    /// One record from a JSON object.
    static func record(_ text: Substring, table: StoreSchema.Table) throws -> StoreRecord {
        var text = String(text)
        return try text.withUTF8 { try record($0, table: table) }
    }

    /// One record from a JSON object's UTF-8 bytes (checked to be UTF-8).
    static func record(_ bytes: UnsafeBufferPointer<UInt8>, table: StoreSchema.Table) throws -> StoreRecord {
        try record(try JSONLines.object(bytes), table: table)
    }

    /// A parsed object as one record of `table`.
    static func record(_ parsed: JSONLines.Parsed, table: StoreSchema.Table) throws -> StoreRecord {
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

    /// A value given on the command line (`--id`, `--where F=V`), read as the field's type.
    static func argument(_ text: String, field: StoreSchema.Field, table: String) throws -> StoreValue {
        switch field.type {
        case .text: return .text(text)
        case .integer:
            guard let number = Int64(text) else { throw mismatch(field, table) }
            return .integer(number)
        case .bytes:
            guard let bytes = Data(base64Encoded: text) else { throw mismatch(field, table) }
            return .bytes(Array(bytes))
        }
    }

    /// A record as one line of JSON, fields in schema order.
    static func line(_ record: StoreRecord, table: StoreSchema.Table) -> String {
        let parts = table.fields.map { field -> String in
            let value: String =
                switch record[field.name] ?? .null {
                case .text(let text): quoted(text)
                case .integer(let number): String(number)
                case .bytes(let bytes): quoted(Data(bytes).base64EncodedString())
                case .null: "null"
                }
            return quoted(field.name) + ":" + value
        }
        return "{" + parts.joined(separator: ",") + "}"
    }

    /// A JSON string: quotes, backslashes and control characters escaped.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u00" + String(scalar.value, radix: 16).leftPadded(to: 2)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

extension String {
    func leftPadded(to count: Int) -> String { String(repeating: "0", count: max(0, count - self.count)) + self }
}
