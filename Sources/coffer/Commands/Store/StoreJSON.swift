import Coffer
import CofferStore
import Foundation

/// Records as JSON for `coffer store`: text fields are JSON strings,
/// integers JSON integers, bytes base64 strings, null is null.
enum StoreJSON {
    /// A JSON value as `coffer store` reads it: strings, integers and null;
    /// anything else (true, 1.5, arrays, objects) is refused by the field.
    enum Scalar: Decodable {
        case string(String)
        case integer(Int64)
        case null
        case other
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if (try? container.decode(Bool.self)) != nil {
                self = .other
            } else if let number = try? container.decode(Int64.self) {
                self = .integer(number)
            } else if let text = try? container.decode(String.self) {
                self = .string(text)
            } else {
                self = .other
            }
        }
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
        let fields: [String: Scalar]
        do { fields = try JSONDecoder().decode([String: Scalar].self, from: Data(text.utf8)) } catch {
            throw CofferError(.malformed, "a record is a JSON object of field names and values")
        }
        var record: StoreRecord = [:]
        for (name, json) in fields {
            guard let field = table.field(name) else {
                throw CofferError(.invalidArgument, "\(table.name) has no field \(name)")
            }
            record[name] = try value(json, field: field, table: table.name)
        }
        return record
    }

    /// The records of a file: one JSON object, or JSON lines (one object per line).
    static func records(_ data: [UInt8], table: StoreSchema.Table) throws -> [StoreRecord] {
        guard let text = String(validating: data, as: UTF8.self) else {
            throw CofferError(.malformed, "the records are not UTF-8 JSON")
        }
        let lines = text.split(whereSeparator: \.isNewline).filter { !$0.allSatisfy(\.isWhitespace) }
        if lines.count > 1, lines.allSatisfy({ $0.first == "{" && $0.last == "}" }),
            (try? record(lines[0], table: table)) != nil
        {
            return try lines.enumerated().map { index, line in
                do { return try record(line, table: table) } catch let error as CofferError {
                    throw error.prefixed("line \(index + 1)")
                }
            }
        }
        return [try record(Substring(text), table: table)]
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
