import Coffer
import Foundation
import GRDB

/// A field named in a condition: `StoreColumn("createdAt") > .date(lastWeek)`,
/// as GRDB's `Column` builds its expressions.
public struct StoreColumn: Sendable, Hashable, ExpressibleByStringLiteral {
    public var name: String
    public init(_ name: String) { self.name = name }
    public init(stringLiteral name: String) { self.name = name }
    /// The field a record type's coding key names (`StoreColumn(Note.CodingKeys.createdAt)`).
    public init(_ key: some CodingKey) { name = key.stringValue }

    /// Between `low` and `high`, both included.
    public func between(_ low: StoreValue, and high: StoreValue) -> StorePredicate {
        self >= low && self <= high
    }

    /// Equal to one of `values` (none: no record).
    public func `in`(_ values: [StoreValue]) -> StorePredicate { StorePredicate(.oneOf(name, values)) }

    /// Text that begins with `prefix` (by characters, case and all; with
    /// `ignoringCase`, ASCII letters match either case).
    public func hasPrefix(_ prefix: String, ignoringCase: Bool = false) -> StorePredicate {
        StorePredicate(.text(name, .prefix, prefix, ignoringCase: ignoringCase))
    }

    /// Text that holds `part` anywhere (as ``hasPrefix(_:ignoringCase:)`` compares).
    public func contains(_ part: String, ignoringCase: Bool = false) -> StorePredicate {
        StorePredicate(.text(name, .contains, part, ignoringCase: ignoringCase))
    }

    public var isNull: StorePredicate { StorePredicate(.null(name, true)) }
    public var isNotNull: StorePredicate { StorePredicate(.null(name, false)) }

    public static func == (column: StoreColumn, value: StoreValue) -> StorePredicate {
        StorePredicate(.compare(column.name, .equal, value))
    }
    public static func != (column: StoreColumn, value: StoreValue) -> StorePredicate {
        StorePredicate(.compare(column.name, .notEqual, value))
    }
    public static func < (column: StoreColumn, value: StoreValue) -> StorePredicate {
        StorePredicate(.compare(column.name, .less, value))
    }
    public static func <= (column: StoreColumn, value: StoreValue) -> StorePredicate {
        StorePredicate(.compare(column.name, .lessOrEqual, value))
    }
    public static func > (column: StoreColumn, value: StoreValue) -> StorePredicate {
        StorePredicate(.compare(column.name, .greater, value))
    }
    public static func >= (column: StoreColumn, value: StoreValue) -> StorePredicate {
        StorePredicate(.compare(column.name, .greaterOrEqual, value))
    }
}

/// A condition on **clear** fields that the database evaluates: comparisons
/// (`<`, `<=`, `>`, `>=`, `==`, `!=`, `between`), `in`, text prefixes and
/// parts, null tests, combined with `&&`, `||` and `!`
/// (docs/store.md, "Queries beyond equality").
///
/// ```swift
/// let recent = StoreQuery("notes").filter(StoreColumn("createdAt") >= .date(lastWeek))
/// let shopping = StoreQuery("notes").filter(StoreColumn("title").contains("shop", ignoringCase: true))
/// let some = StoreQuery("notes").filter(StoreColumn("id").in([1, 5, 9]) || StoreColumn("title").isNull)
/// ```
///
/// Text compares by its UTF-8 bytes, as the store orders it, on SQLite and
/// PostgreSQL alike; numbers and dates as numbers; a value must be of the
/// field's type (a whole number may stand for a double); a comparison with
/// null matches nothing (use `isNull`).
/// A sealed field is refused: the database holds only its sealed bytes.
/// Find a sealed field by equality through its blind index
/// (`filter(_:equals:)`), or by token (`filter(_:hasToken:)`).
public struct StorePredicate: Sendable, Hashable {
    indirect enum Node: Sendable, Hashable {
        case compare(String, Comparison, StoreValue)
        case oneOf(String, [StoreValue])
        case text(String, TextMatch, String, ignoringCase: Bool)
        case null(String, Bool)
        case and([Node])
        case or([Node])
        case not(Node)
    }

    enum Comparison: String, Sendable, Hashable {
        case equal = "="
        case notEqual = "<>"
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
    }

    enum TextMatch: Sendable, Hashable { case prefix, contains }

    let node: Node
    init(_ node: Node) { self.node = node }

    /// At most this many values in one `in` (both databases bind each).
    public static let maximumValues = 10_000

    public static func && (a: StorePredicate, b: StorePredicate) -> StorePredicate {
        StorePredicate(.and([a.node, b.node]))
    }
    public static func || (a: StorePredicate, b: StorePredicate) -> StorePredicate {
        StorePredicate(.or([a.node, b.node]))
    }
    public static prefix func ! (a: StorePredicate) -> StorePredicate { StorePredicate(.not(a.node)) }

    /// The fields the predicate names.
    var fields: [String] {
        func names(_ node: Node) -> [String] {
            switch node {
            case .compare(let name, _, _), .oneOf(let name, _), .text(let name, _, _, _), .null(let name, _): [name]
            case .and(let nodes), .or(let nodes): nodes.flatMap(names)
            case .not(let inner): names(inner)
            }
        }
        return names(node)
    }

    /// The predicate as SQL with `?` placeholders and their values; every
    /// field checked to be a clear field of `table` of the value's kind.
    func sql(_ table: StoreSchema.Table, _ dialect: StoreDialect) throws -> (String, [DatabaseValue]) {
        var arguments: [DatabaseValue] = []
        func field(_ name: String) throws -> StoreSchema.Field {
            guard let field = table.field(name) else {
                throw CofferError(.invalidArgument, "\(table.name) has no field \(name)")
            }
            guard !field.sealed else {
                throw CofferError(
                    .invalidArgument,
                    "\(table.name).\(name) is sealed: the database cannot compare what it cannot read. Ranges, in, prefixes and parts work on clear fields; find a sealed field by equality through its blind index (filter(_:equals:)) or by token (filter(_:hasToken:))"
                )
            }
            return field
        }
        func column(_ field: StoreSchema.Field) -> String {
            StoreSQL.quoted(field.name) + (field.type == .text && dialect == .postgres ? " COLLATE \"C\"" : "")
        }
        func value(_ value: StoreValue, _ field: StoreSchema.Field) throws -> DatabaseValue {
            guard value != .null else {
                throw CofferError(
                    .invalidArgument,
                    "a comparison of \(table.name).\(field.name) with null matches nothing: use isNull or isNotNull")
            }
            // A whole number compares with a double field as that number
            // (`StoreColumn("price") > 2`); no other type stands in for another.
            if field.type == .double, let number = value.integerValue, let exact = Double(exactly: number) {
                return exact.databaseValue
            }
            guard field.type != .date || value.type == .date else {
                throw CofferError(
                    .invalidArgument,
                    "\(table.name).\(field.name) holds dates: compare it with .date(someDate), not \(value.kindName)")
            }
            return try StoreSQL.databaseValue(value, for: field, table: table.name)
        }
        func render(_ node: Node) throws -> String {
            switch node {
            case .compare(let name, let comparison, let operand):
                let field = try field(name)
                arguments.append(try value(operand, field))
                return "\(column(field)) \(comparison.rawValue) ?"
            case .oneOf(let name, let values):
                let field = try field(name)
                guard values.count <= Self.maximumValues else {
                    throw CofferError(
                        .invalidArgument,
                        "an in condition on \(table.name).\(name) holds \(values.count) values; at most \(Self.maximumValues)"
                    )
                }
                guard !values.isEmpty else { return "1 = 0" }
                arguments += try values.map { try value($0, field) }
                return "\(column(field)) IN (\(values.map { _ in "?" }.joined(separator: ", ")))"
            case .text(let name, let match, let text, let ignoringCase):
                let field = try field(name)
                guard field.type == .text else {
                    throw CofferError(
                        .invalidArgument,
                        "\(table.name).\(name) holds \(field.type.name): a prefix or a part is for text fields")
                }
                let needle = ignoringCase ? Self.asciiLowercased(text) : text
                arguments.append(try value(.text(needle), field))
                // Character positions, not LIKE: nothing in the text is a
                // pattern, and case matters unless asked (LIKE ignores
                // ASCII case on SQLite and not on PostgreSQL).
                var haystack = column(field)
                // lower() folds ASCII letters only: SQLite's own, and
                // PostgreSQL's under the "C" collation.
                if ignoringCase { haystack = "lower(\(haystack))" }
                let position = dialect == .sqlite ? "instr(\(haystack), ?)" : "strpos(\(haystack), ?)"
                return match == .prefix ? "\(position) = 1" : "\(position) > 0"
            case .null(let name, let isNull):
                let field = try field(name)
                return "\(StoreSQL.quoted(field.name)) IS \(isNull ? "" : "NOT ")NULL"
            case .and(let nodes):
                return "(" + (try nodes.map(render).joined(separator: " AND ")) + ")"
            case .or(let nodes):
                return "(" + (try nodes.map(render).joined(separator: " OR ")) + ")"
            case .not(let inner):
                return "NOT " + (try render(inner))
            }
        }
        let sql = try render(node)
        return (sql, arguments)
    }

    static func asciiLowercased(_ text: String) -> String {
        String(
            decoding: text.utf8.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 + 32 : $0 },
            as: UTF8.self)
    }
}
