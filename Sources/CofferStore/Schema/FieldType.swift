import Coffer
import Foundation

extension StoreSchema {
    /// A field's type. Everything a type means is in this file: its tag in
    /// the sealed encoding, the column each database keeps it in, how its
    /// values order, how JSON and the command line write them, and which
    /// Swift types a typed record holds in it. Adding a type is adding it
    /// here (and to ``all``).
    ///
    /// | type | Swift | SQLite | PostgreSQL | JSON |
    /// |---|---|---|---|---|
    /// | `text` | `String` | TEXT | TEXT | a string |
    /// | `integer` | `Int`, `Int8`…`UInt64`, `Bool` | INTEGER | BIGINT | an integer |
    /// | `double` | `Double`, `Float` | REAL | DOUBLE PRECISION | a number |
    /// | `date` | `Date` | INTEGER (ms) | BIGINT (ms) | an ISO 8601 string, or milliseconds |
    /// | `bytes` | `Data` | BLOB | BYTEA | a base64 string |
    public struct FieldType: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The name schemas use: `"text"`, `"integer"`, …
        public let name: String
        /// Its values' tag in ``StoreValue/encoded``.
        let tag: UInt8
        /// What a column holds for it.
        let primitive: Primitive

        enum Primitive { case integer, double, text, bytes }

        public static let text = FieldType(name: "text", tag: UInt8(ascii: "t"), primitive: .text)
        public static let integer = FieldType(name: "integer", tag: UInt8(ascii: "i"), primitive: .integer)
        /// A finite IEEE 754 double, ordered as a number.
        public static let double = FieldType(name: "double", tag: UInt8(ascii: "f"), primitive: .double)
        /// A moment as whole milliseconds since 1970, ordered.
        public static let date = FieldType(name: "date", tag: UInt8(ascii: "d"), primitive: .integer)
        public static let bytes = FieldType(name: "bytes", tag: UInt8(ascii: "b"), primitive: .bytes)

        /// Every type, in the order null and they sort in (``StoreQuery``'s in-memory order).
        public static let all: [FieldType] = [.integer, .double, .date, .text, .bytes]

        public var description: String { name }

        public static func == (a: FieldType, b: FieldType) -> Bool { a.name == b.name }
        public func hash(into hasher: inout Hasher) { hasher.combine(name) }

        /// One of ``all``'s names; another is `dataCorrupted` at its place
        /// (said as "tables[0].fields[1].type must be …").
        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            let name = try container.decode(String.self)
            guard let known = Self.all.first(where: { $0.name == name }) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "no field type \(name)")
            }
            self = known
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(name)
        }

        private init(name: String, tag: UInt8, primitive: Primitive) {
            self.name = name
            self.tag = tag
            self.primitive = primitive
        }
    }
}

// MARK: - Databases

extension StoreSchema.FieldType {
    /// The column type a clear field of this type has.
    func column(_ dialect: StoreDialect) -> String {
        switch (primitive, dialect) {
        case (.text, _): "TEXT"
        case (.integer, .sqlite): "INTEGER"
        case (.integer, .postgres): "BIGINT"
        case (.double, .sqlite): "REAL"
        case (.double, .postgres): "DOUBLE PRECISION"
        case (.bytes, _): dialect.bytes
        }
    }

    /// The PostgreSQL column types (`information_schema.columns.data_type`)
    /// an adopted table's column may have for this type.
    package var postgresColumnTypes: Set<String> {
        switch primitive {
        case .text: ["text", "character varying", "character"]
        case .integer: ["smallint", "integer", "bigint"]
        case .double: ["double precision", "real"]
        case .bytes: ["bytea"]
        }
    }

    /// PostgreSQL's expression for a clear `column` of this type as its
    /// values' ``StoreValue/encoded`` bytes (a field sealed in place:
    /// `int8send` and `float8send` write big-endian, as the encoding does).
    func postgresEncoded(_ column: String) -> String {
        let tag = "'\(Character(Unicode.Scalar(tag)))'::bytea"
        return switch primitive {
        case .integer: "\(tag) || int8send(\(column))"
        case .double: "\(tag) || float8send(\(column))"
        case .text: "\(tag) || convert_to(\(column), 'UTF8')"
        case .bytes: "\(tag) || \(column)"
        }
    }

    /// Whether `storage`, read from a column, is a value of this type.
    func holds(_ storage: StoreValue.Storage) -> Bool {
        switch (primitive, storage) {
        case (.integer, .integer), (.text, .text), (.bytes, .bytes): true
        case (.double, .double(let number)): number.isFinite
        default: false
        }
    }

    /// Null first, then by type (``all``'s order), then by value: numbers
    /// and dates as numbers, text by UTF-8 bytes, bytes lexicographically.
    static func ascending(_ a: StoreValue, _ b: StoreValue) -> Bool {
        switch (a.storage, b.storage) {
        case (.integer(let x), .integer(let y)) where a.type == b.type: x < y
        case (.double(let x), .double(let y)): x < y
        case (.text(let x), .text(let y)): x.utf8.lexicographicallyPrecedes(y.utf8)
        case (.bytes(let x), .bytes(let y)): x.lexicographicallyPrecedes(y)
        default: rank(a) < rank(b)
        }
    }

    private static func rank(_ value: StoreValue) -> Int {
        value.type.flatMap { type in all.firstIndex(of: type).map { $0 + 1 } } ?? 0
    }

    /// Milliseconds since 1970, to the nearest, clamped to Int64. To the
    /// nearest, not toward the past: a `Date` made from milliseconds (a
    /// date read back from the store, or parsed from `.123`) is a binary
    /// fraction a hair either side of them, and must store as itself.
    static func milliseconds(of date: Date) -> Int64 {
        exactMilliseconds(of: date) ?? (date.timeIntervalSince1970 < 0 ? .min : .max)
    }

    /// As ``milliseconds(of:)``; nil beyond Int64.
    static func exactMilliseconds(of date: Date) -> Int64? {
        Int64(exactly: (date.timeIntervalSince1970 * 1000).rounded())
    }
}

// MARK: - Swift values

extension StoreSchema.FieldType {
    /// A value of one of the Swift types fields hold, or nil for another type.
    static func value(ofSwift value: some Encodable, field: String) throws -> StoreValue? {
        switch value {
        case let text as String: return .text(text)
        case let flag as Bool: return .integer(flag ? 1 : 0)
        case let date as Date:
            guard let milliseconds = exactMilliseconds(of: date) else {
                throw CofferError(.invalidArgument, "the date in \(field) is out of range")
            }
            return .date(milliseconds: milliseconds)
        case let data as Data: return .bytes(Array(data))
        case let number as Double: return try finite(number, field: field)
        case let number as Float: return try finite(Double(number), field: field)
        case let number as any BinaryInteger:
            guard let whole = Int64(exactly: number) else {
                throw CofferError(.invalidArgument, "\(field) holds an integer past 64 bits")
            }
            return .integer(whole)
        default: return nil
        }
    }

    private static func finite(_ number: Double, field: String) throws -> StoreValue {
        guard number.isFinite else {
            throw CofferError(.invalidArgument, "\(field) holds \(number): a double field holds finite numbers")
        }
        return .double(number)
    }

    /// `value` as a `T`, when `T` is one of the Swift types fields hold:
    /// `.some(nil)` when the value is of another field type (never
    /// converted), nil when `T` is not such a type.
    static func swiftValue<T>(_ type: T.Type, of value: StoreValue) -> T?? {
        func cast(_ result: Any?) -> T?? { .some(result.map { $0 as! T }) }
        switch T.self {
        case is String.Type: return cast(value.textValue)
        case is Bool.Type: return cast(value.integerValue.flatMap { $0 == 0 ? false : $0 == 1 ? true : nil })
        case is Date.Type: return cast(value.dateValue)
        case is Data.Type: return cast(value.bytesValue.map { Data($0) })
        case is Double.Type: return cast(value.doubleValue)
        case is Float.Type: return cast(value.doubleValue.flatMap { Float(exactly: $0) })
        case let integer as any FixedWidthInteger.Type:
            return cast(value.integerValue.flatMap { integer.init(exactly: $0) })
        default: return nil
        }
    }

    /// The field type a property of Swift type `T` is stored as, and a
    /// placeholder value of it; nil when `T` is not one of the types fields hold.
    static func placeholder<T>(_ type: T.Type) -> (StoreSchema.FieldType, T)? {
        switch T.self {
        case is String.Type: (.text, "" as! T)
        case is Bool.Type: (.integer, false as! T)
        case is Date.Type: (.date, Date(timeIntervalSince1970: 0) as! T)
        case is Data.Type: (.bytes, Data() as! T)
        case is Double.Type: (.double, 0.0 as! T)
        case is Float.Type: (.double, Float(0) as! T)
        case let integer as any FixedWidthInteger.Type: (.integer, integer.init(0) as! T)
        default: nil
        }
    }
}

// MARK: - JSON and the command line

extension StoreSchema.FieldType {
    /// A JSON value as records' JSON lines give it.
    enum JSONScalar: Sendable, Equatable {
        case string(String)
        case integer(Int64)
        /// A number with a fraction or an exponent, or past 64 bits.
        case number(Double)
        case null
    }

    /// The value `json` gives a field of this type, or nil when this type does not take it.
    func value(json: JSONScalar) -> StoreValue? {
        switch (primitive, json) {
        case (_, .null): return .null
        case (.text, .string(let text)): return .text(text)
        case (.integer, .integer(let number)): return StoreValue(self, .integer(number))
        case (.integer, .string(let text)) where self == .date: return Self.date(iso8601: text)
        case (.double, .integer(let number)): return .double(Double(number))
        case (.double, .number(let number)): return number.isFinite ? .double(number) : nil
        case (.bytes, .string(let text)): return Data(base64Encoded: text).map { .bytes(Array($0)) }
        default: return nil
        }
    }

    /// What JSON value a field of this type takes, for errors.
    var jsonShape: String {
        switch self {
        case .integer: "a JSON integer"
        case .double: "a JSON number"
        case .date: "an ISO 8601 date string or milliseconds since 1970"
        case .bytes: "a base64 JSON string"
        default: "a JSON string"
        }
    }

    /// A value of this type as JSON text; nil for a value of another type.
    func json(_ value: StoreValue) -> String? {
        guard value.type == self else { return value.isNull ? "null" : nil }
        switch value.storage {
        case .null: return "null"
        case .integer(let number) where self == .date: return RecordJSON.quoted(Self.iso8601(milliseconds: number))
        case .integer(let number): return String(number)
        case .double(let number): return number.description
        case .text(let text): return RecordJSON.quoted(text)
        case .bytes(let bytes): return RecordJSON.quoted(Data(bytes).base64EncodedString())
        }
    }

    /// A value given as a command-line argument (`--id`, `--where F=V`).
    func value(argument text: String) -> StoreValue? {
        switch primitive {
        case .text: .text(text)
        case .integer:
            Int64(text).map { StoreValue(self, .integer($0)) } ?? (self == .date ? Self.date(iso8601: text) : nil)
        case .double: Double(text).flatMap { $0.isFinite ? .double($0) : nil }
        case .bytes: Data(base64Encoded: text).map { .bytes(Array($0)) }
        }
    }

    /// `2026-11-28T22:28:58.123Z` (milliseconds, UTC) or with an offset, to a date.
    static func date(iso8601 text: String) -> StoreValue? {
        let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        guard let date = (try? withFraction.parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text)) else {
            return nil
        }
        return .date(date)
    }

    /// `2026-11-28T22:28:58.123Z`: the seconds formatted, the milliseconds
    /// written from the integer (so no floating-point rounding shows).
    static func iso8601(milliseconds: Int64) -> String {
        let (seconds, remainder) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        let whole = remainder < 0 ? seconds - 1 : seconds
        let fraction = remainder < 0 ? remainder + 1000 : remainder
        let text = Date(timeIntervalSince1970: Double(whole)).formatted(Date.ISO8601FormatStyle())
        let digits = String(fraction)
        return text.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}
