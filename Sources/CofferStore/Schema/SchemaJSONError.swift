import Coffer
import Foundation

/// A schema file's JSON that does not decode, said as a person fixes it:
/// where (`tables[0].fields[1].sealed`) and what that place takes, never
/// Swift's `DecodingError` as it prints itself.
enum SchemaJSONError {
    /// Refuses a member the schema does not have, anywhere in the file: a
    /// misspelt `"seald": true` would otherwise leave a field clear.
    static func checkMembers(_ data: Data) throws {
        guard let top = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return }
        func check(_ object: [String: Any], _ allowed: [String], _ place: String) throws {
            for name in object.keys.sorted() where !allowed.contains(name) {
                throw CofferError(
                    .invalidArgument,
                    "schema: \(place) has \"\(name)\", which is not one of its members (\(allowed.joined(separator: ", ")))"
                )
            }
        }
        try check(top, ["tables"], "the file's top level")
        for (t, table) in ((top["tables"] as? [Any]) ?? []).enumerated() {
            guard let table = table as? [String: Any] else { continue }
            try check(table, ["name", "primaryKey", "fields", "tenant", "tenantKeys"], "tables[\(t)]")
            for (f, field) in ((table["fields"] as? [Any]) ?? []).enumerated() {
                guard let field = field as? [String: Any] else { continue }
                try check(field, ["name", "type", "sealed", "bind", "indexes"], "tables[\(t)].fields[\(f)]")
                for (i, index) in ((field["indexes"] as? [Any]) ?? []).enumerated() {
                    guard let index = index as? [String: Any] else { continue }
                    try check(
                        index, ["name", "transforms", "bits", "with", "tokens", "acceptLeakage"],
                        "tables[\(t)].fields[\(f)].indexes[\(i)]")
                }
            }
        }
    }

    static func explain(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "it is not JSON" }
        switch error {
        case .typeMismatch(let type, let context):
            return "\(place(context.codingPath)) must be \(kind(type))"
        case .valueNotFound(let type, let context):
            return "\(place(context.codingPath)) is null; it must be \(kind(type))"
        case .keyNotFound(let key, let context):
            return "\(place(context.codingPath + [key])) is missing"
        case .dataCorrupted(let context):
            guard let last = context.codingPath.last else { return "it is not JSON" }
            if last.stringValue == "type" {
                let names = StoreSchema.FieldType.all.map { "\"\($0.name)\"" }
                return
                    "\(place(context.codingPath)) must be \(names.dropLast().joined(separator: ", ")) or \(names.last!)"
            }
            return "\(place(context.codingPath)) holds a value it cannot take"
        @unknown default:
            return "it is not the documented shape"
        }
    }

    /// `tables[0].fields[1].sealed`; the whole file when the path is empty.
    static func place(_ path: [any CodingKey]) -> String {
        guard !path.isEmpty else { return "the file's top level" }
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }

    static func kind(_ type: Any.Type) -> String {
        switch type {
        case is Bool.Type: "true or false"
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type, is UInt8.Type, is Int32.Type: "a whole number"
        case is [Any].Type: "a list"
        case is [String: Any].Type: "an object"
        default:
            String(describing: type).hasPrefix("Array") ? "a list" : "an object"
        }
    }
}
