import Coffer
import Foundation

/// One cell's value: text, an integer, bytes, or null. Sealed cells hold
/// its encoding (below), so a sealed integer opens as an integer.
///
/// Encoding (docs/store.md): a tag byte, then the payload —
/// `t` ‖ UTF-8 text; `i` ‖ 8 bytes, big-endian two's complement; `b` ‖
/// bytes; `n` alone for null.
public enum StoreValue: Sendable, Hashable, CustomStringConvertible {
    case text(String)
    case integer(Int64)
    case bytes([UInt8])
    case null

    /// The tagged encoding sealed cells and contexts use.
    public var encoded: [UInt8] {
        switch self {
        case .text(let text): [UInt8(ascii: "t")] + Array(text.utf8)
        case .integer(let number): [UInt8(ascii: "i")] + withUnsafeBytes(of: number.bigEndian, Array.init)
        case .bytes(let bytes): [UInt8(ascii: "b")] + bytes
        case .null: [UInt8(ascii: "n")]
        }
    }

    /// A value from its encoding; anything else is `malformed`.
    public init(encoded bytes: some Collection<UInt8>) throws {
        guard let tag = bytes.first else { throw CofferError(.malformed, "an encoded store value is empty") }
        let payload = bytes.dropFirst()
        switch tag {
        case UInt8(ascii: "t"):
            guard let text = String(validating: payload, as: UTF8.self) else {
                throw CofferError(.malformed, "an encoded text value is not UTF-8")
            }
            self = .text(text)
        case UInt8(ascii: "i"):
            guard payload.count == 8 else { throw CofferError(.malformed, "an encoded integer is 8 bytes") }
            self = .integer(Int64(bitPattern: payload.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }))
        case UInt8(ascii: "b"): self = .bytes(Array(payload))
        case UInt8(ascii: "n"):
            guard payload.isEmpty else { throw CofferError(.malformed, "an encoded null has no payload") }
            self = .null
        default: throw CofferError(.malformed, "unknown store value tag \(tag)")
        }
    }

    /// The text an index transform starts from: text as is, an integer in
    /// decimal; nil for bytes and null (not indexed by text transforms).
    var indexText: String? {
        switch self {
        case .text(let text): text
        case .integer(let number): String(number)
        case .bytes, .null: nil
        }
    }

    /// Shows the kind only: a value may be private.
    public var description: String {
        switch self {
        case .text: "StoreValue.text(<\(encoded.count - 1) bytes>)"
        case .integer: "StoreValue.integer(<redacted>)"
        case .bytes(let bytes): "StoreValue.bytes(<\(bytes.count) bytes>)"
        case .null: "StoreValue.null"
        }
    }
}

/// Literals, so that records and conditions read as data:
/// `["toWhom": "Grandma", "year": 2026]`.
extension StoreValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension StoreValue {
    /// The text, or nil for another kind.
    public var textValue: String? {
        if case .text(let text) = self { return text }
        return nil
    }

    /// The integer, or nil for another kind.
    public var integerValue: Int64? {
        if case .integer(let number) = self { return number }
        return nil
    }

    /// The bytes, or nil for another kind.
    public var bytesValue: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }

    public var isNull: Bool { self == .null }

    /// `value` as a typed record's field holds it (``SealedRecord``): a
    /// string as text, integers and booleans as integers, a date as
    /// milliseconds since 1970, a double as text, data as bytes, nil as
    /// null. For conditions on typed fields:
    /// `query.filter("due", equals: try StoreValue(encoding: date))`.
    public init(encoding value: some Encodable) throws {
        self = try FieldEncoder.value(of: value, field: "value")
    }
}

extension StoreValue: ExpressibleByStringInterpolation {}
