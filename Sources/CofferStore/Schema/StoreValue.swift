import Coffer
import Foundation

/// One cell's value: null, or a value of one of the field types
/// (``StoreSchema/FieldType``: text, an integer, a double, a date, bytes).
/// Sealed cells hold its encoding (below), so a sealed integer opens as an
/// integer.
///
/// A struct, not an enum, so that a type added later (one file,
/// FieldType.swift) breaks no one's `switch`: read a value with
/// ``textValue``, ``integerValue``, ``doubleValue``, ``dateValue``,
/// ``bytesValue``, or compare it with `==`.
///
/// Encoding (docs/store.md): a tag byte, then the payload —
/// `t` ‖ UTF-8 text; `i` ‖ 8 bytes, big-endian two's complement; `f` ‖ the
/// 8 bytes of an IEEE 754 double, big-endian; `d` ‖ milliseconds since
/// 1970 as `i`'s; `b` ‖ bytes; `n` alone for null.
public struct StoreValue: Sendable, Hashable, CustomStringConvertible {
    /// The field type the value is of; nil for null.
    public let type: StoreSchema.FieldType?
    /// What a database column holds for it.
    package let storage: Storage

    /// The kinds of value a database column holds.
    package enum Storage: Sendable, Hashable {
        case null
        case integer(Int64)
        case double(Double)
        case text(String)
        case bytes([UInt8])
    }

    /// A value of `type` held as `storage`, which must be what `type` holds.
    package init(_ type: StoreSchema.FieldType?, _ storage: Storage) {
        self.type = type
        self.storage = storage
    }

    public static func text(_ text: String) -> StoreValue { .init(.text, .text(text)) }
    public static func integer(_ number: Int64) -> StoreValue { .init(.integer, .integer(number)) }
    /// A double; a store takes finite ones only (SQLite keeps no NaN).
    public static func double(_ number: Double) -> StoreValue { .init(.double, .double(number)) }
    /// A date as whole milliseconds since 1970, rounded to the nearest:
    /// `Date()` comes back up to half a millisecond off (a date that came
    /// from the store stores as itself; compare others at millisecond
    /// precision). A date beyond Int64's milliseconds (about 292 million
    /// years) is clamped to the nearest end.
    public static func date(_ date: Date) -> StoreValue {
        .init(.date, .integer(StoreSchema.FieldType.milliseconds(of: date)))
    }
    /// A date from its whole milliseconds since 1970.
    public static func date(milliseconds: Int64) -> StoreValue { .init(.date, .integer(milliseconds)) }
    public static func bytes(_ bytes: [UInt8]) -> StoreValue { .init(.bytes, .bytes(bytes)) }
    public static let null = StoreValue(nil, .null)

    /// The tagged encoding sealed cells and contexts use.
    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encodedCount)
        encode(into: &bytes)
        return bytes
    }

    /// Appends ``encoded`` without building it apart (contexts, sealing).
    func encode(into bytes: inout [UInt8]) {
        bytes.append(type?.tag ?? UInt8(ascii: "n"))
        switch storage {
        case .null: break
        case .integer(let number): withUnsafeBytes(of: number.bigEndian) { bytes += $0 }
        case .double(let number): withUnsafeBytes(of: number.bitPattern.bigEndian) { bytes += $0 }
        case .text(let text): bytes += text.utf8
        case .bytes(let payload): bytes += payload
        }
    }

    /// The length of ``encoded``.
    var encodedCount: Int {
        switch storage {
        case .null: 1
        case .integer, .double: 9
        case .text(let text): 1 + text.utf8.count
        case .bytes(let payload): 1 + payload.count
        }
    }

    /// A value from its encoding; anything else is `malformed`.
    public init(encoded bytes: some Collection<UInt8>) throws {
        guard let tag = bytes.first else { throw CofferError(.malformed, "an encoded store value is empty") }
        let payload = bytes.dropFirst()
        if tag == UInt8(ascii: "n") {
            guard payload.isEmpty else { throw CofferError(.malformed, "an encoded null has no payload") }
            self = .null
            return
        }
        guard let type = StoreSchema.FieldType.all.first(where: { $0.tag == tag }) else {
            throw CofferError(.malformed, "unknown store value tag \(tag)")
        }
        func eightBytes() throws -> UInt64 {
            guard payload.count == 8 else { throw CofferError(.malformed, "an encoded \(type) is 8 bytes") }
            return payload.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        switch type.primitive {
        case .integer: self.init(type, .integer(Int64(bitPattern: try eightBytes())))
        case .double:
            let number = Double(bitPattern: try eightBytes())
            guard number.isFinite else { throw CofferError(.malformed, "an encoded double is not finite") }
            self.init(type, .double(number))
        case .text:
            guard let text = String(validating: payload, as: UTF8.self) else {
                throw CofferError(.malformed, "an encoded text value is not UTF-8")
            }
            self.init(type, .text(text))
        case .bytes: self.init(type, .bytes(Array(payload)))
        }
    }

    /// The text an index transform starts from: text as is, an integer
    /// (or a date's milliseconds) in decimal, a double as Swift writes it;
    /// nil for bytes and null (not indexed by text transforms).
    var indexText: String? {
        switch storage {
        case .text(let text): text
        case .integer(let number): String(number)
        case .double(let number): number.description
        case .bytes, .null: nil
        }
    }

    /// The type's name, or null.
    var kindName: String { type?.name ?? "null" }

    /// Shows the kind only: a value may be private.
    public var description: String {
        switch storage {
        case .text(let text): "StoreValue.text(<\(text.utf8.count) bytes>)"
        case .bytes(let bytes): "StoreValue.bytes(<\(bytes.count) bytes>)"
        case .null: "StoreValue.null"
        case .integer, .double: "StoreValue.\(kindName)(<redacted>)"
        }
    }
}

/// Literals, so that records and conditions read as data:
/// `["toWhom": "Grandma", "year": 2026, "price": 9.5]`.
extension StoreValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringInterpolation
{
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension StoreValue {
    /// The text, or nil for another type.
    public var textValue: String? {
        if type == .text, case .text(let text) = storage { return text }
        return nil
    }

    /// The integer, or nil for another type (a date's milliseconds too).
    public var integerValue: Int64? {
        if type == .integer, case .integer(let number) = storage { return number }
        return nil
    }

    /// The double, or nil for another type (an integer too).
    public var doubleValue: Double? {
        if type == .double, case .double(let number) = storage { return number }
        return nil
    }

    /// The date, or nil for another type.
    public var dateValue: Date? {
        if type == .date, case .integer(let milliseconds) = storage {
            return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        }
        return nil
    }

    /// The bytes, or nil for another type.
    public var bytesValue: [UInt8]? {
        if type == .bytes, case .bytes(let bytes) = storage { return bytes }
        return nil
    }

    public var isNull: Bool { type == nil }

    /// `value` as a typed record's field holds it (``SealedRecord``): a
    /// string as text, integers and booleans as integers, a date as a date
    /// (milliseconds), a double or float as a double, data as bytes, nil as
    /// null. For conditions on typed fields:
    /// `query.filter("due", equals: try StoreValue(encoding: date))`.
    public init(encoding value: some Encodable) throws {
        self = try FieldEncoder.value(of: value, field: "value")
    }
}
