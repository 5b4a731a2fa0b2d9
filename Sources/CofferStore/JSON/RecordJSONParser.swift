import Coffer
import Foundation

/// A reader of flat JSON objects straight from UTF-8 bytes, for records:
/// field names to strings, numbers or null. It takes exactly RFC 8259's
/// grammar for those (escapes and surrogate pairs included); a value of
/// another kind (true, an array, an object) stops it, and the field's own
/// error is raised by the caller (``RecordJSON``).
enum RecordJSONParser {
    typealias Scalar = StoreSchema.FieldType.JSONScalar

    /// A field's value, or the name of a field whose value is of a kind
    /// records do not take.
    enum Parsed: Sendable {
        case fields([(String, Scalar)])
        case other(field: String)
    }

    static func malformed(_ what: String) -> CofferError {
        CofferError(.malformed, "a record is a JSON object of field names and values: \(what)")
    }

    /// The object in `bytes` (nothing but whitespace around it).
    static func object(_ bytes: UnsafeBufferPointer<UInt8>) throws -> Parsed {
        var reader = Reader(bytes: bytes)
        reader.skipSpace()
        guard reader.take(UInt8(ascii: "{")) else { throw malformed("it does not start with {") }
        var fields: [(String, Scalar)] = []
        reader.skipSpace()
        if !reader.take(UInt8(ascii: "}")) {
            repeat {
                reader.skipSpace()
                guard reader.peek == UInt8(ascii: "\"") else { throw malformed("a field name is not a string") }
                let name = try reader.string()
                reader.skipSpace()
                guard reader.take(UInt8(ascii: ":")) else { throw malformed("no : after \(name)") }
                reader.skipSpace()
                guard let value = try reader.scalar() else { return .other(field: name) }
                fields.append((name, value))
                reader.skipSpace()
            } while reader.take(UInt8(ascii: ","))
            guard reader.take(UInt8(ascii: "}")) else { throw malformed("a field is not followed by , or }") }
        }
        reader.skipSpace()
        guard reader.atEnd else { throw malformed("something follows the object") }
        return .fields(fields)
    }

    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        var atEnd: Bool { at == bytes.count }
        var peek: UInt8? { at < bytes.count ? bytes[at] : nil }

        mutating func take(_ byte: UInt8) -> Bool {
            guard peek == byte else { return false }
            at += 1
            return true
        }

        mutating func skipSpace() {
            while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { at += 1 }
        }

        /// A string, integer or null; nil for a value of another kind.
        mutating func scalar() throws -> Scalar? {
            guard let byte = peek else { throw malformed("it ends inside a field") }
            switch byte {
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "n"):
                guard bytes.count - at >= 4, bytes[at + 1] == 0x75, bytes[at + 2] == 0x6C, bytes[at + 3] == 0x6C
                else { throw malformed("a value is not JSON") }
                at += 4
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try integer()
            default: return nil
            }
        }

        /// An integer, or a number (a fraction, an exponent, or past 64 bits).
        mutating func integer() throws -> Scalar? {
            let start = at
            let negative = take(UInt8(ascii: "-"))
            let first = at
            var magnitude: UInt64 = 0
            var overflow = false
            while let byte = peek, (0x30...0x39).contains(byte) {
                let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (plus, o2) = times.addingReportingOverflow(UInt64(byte - 0x30))
                overflow = overflow || o1 || o2
                magnitude = plus
                at += 1
            }
            guard at > first else { throw malformed("a - is not followed by digits") }
            guard at - first == 1 || bytes[first] != 0x30 else { throw malformed("a number has a leading zero") }
            if let byte = peek, byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                return try number(from: start)
            }
            if !overflow && negative && magnitude <= UInt64(Int64.max) + 1 {
                return .integer(magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude))
            }
            if !overflow && !negative && magnitude <= UInt64(Int64.max) { return .integer(Int64(magnitude)) }
            return try number(from: start)
        }

        /// The rest of a number whose integer part was read (RFC 8259:
        /// `.` digits, then `e` or `E`, a sign, digits), as a double.
        mutating func number(from start: Int) throws -> Scalar {
            func digits() throws {
                let first = at
                while let byte = peek, (0x30...0x39).contains(byte) { at += 1 }
                guard at > first else { throw malformed("a number is cut short") }
            }
            if take(UInt8(ascii: ".")) { try digits() }
            if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
                _ = take(UInt8(ascii: "+")) || take(UInt8(ascii: "-"))
                try digits()
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
            guard let number = Double(text) else { throw malformed("a number is not JSON") }
            return .number(number)
        }

        /// A string from its opening quote: its bytes copied once when it
        /// has no escape (the input is UTF-8 already checked).
        mutating func string() throws -> String {
            at += 1
            let start = at
            while let byte = peek, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                guard byte >= 0x20 else { throw malformed("a string holds a control character") }
                at += 1
            }
            guard let stop = peek else { throw malformed("a string is not closed") }
            if stop == UInt8(ascii: "\"") {
                at += 1
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at - 1]), as: UTF8.self)
            }
            var utf8 = Array(UnsafeBufferPointer(rebasing: bytes[start..<at]))
            return try escapedRest(&utf8)
        }

        /// The rest of a string that has an escape.
        mutating func escapedRest(_ utf8: inout [UInt8]) throws -> String {
            while true {
                guard let byte = peek else { throw malformed("a string is not closed") }
                at += 1
                switch byte {
                case UInt8(ascii: "\""): return String(decoding: utf8, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escape = peek else { throw malformed("a string is not closed") }
                    at += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                    case UInt8(ascii: "b"): utf8.append(0x08)
                    case UInt8(ascii: "f"): utf8.append(0x0C)
                    case UInt8(ascii: "n"): utf8.append(0x0A)
                    case UInt8(ascii: "r"): utf8.append(0x0D)
                    case UInt8(ascii: "t"): utf8.append(0x09)
                    case UInt8(ascii: "u"): utf8 += UTF8.encode(try unicodeEscape())!
                    default: throw malformed("a string has an unknown escape")
                    }
                case 0..<0x20: throw malformed("a string holds a control character")
                default: utf8.append(byte)
                }
            }
        }

        /// The scalar of `\uXXXX` (after the `u`), a surrogate pair read whole.
        mutating func unicodeEscape() throws -> Unicode.Scalar {
            let high = try hex4()
            if (0xD800...0xDBFF).contains(high) {
                guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")) else {
                    throw malformed("a string has half a surrogate pair")
                }
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw malformed("a string has half a surrogate pair") }
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))!
            }
            guard let scalar = Unicode.Scalar(high) else { throw malformed("a string has half a surrogate pair") }
            return scalar
        }

        mutating func hex4() throws -> UInt32 {
            guard bytes.count - at >= 4 else { throw malformed("a \\u escape is cut short") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[at]
                let digit: UInt8
                switch byte {
                case 0x30...0x39: digit = byte - 0x30
                case 0x41...0x46: digit = byte - 0x37
                case 0x61...0x66: digit = byte - 0x57
                default: throw malformed("a \\u escape is not 4 hex digits")
                }
                value = value << 4 | UInt32(digit)
                at += 1
            }
            return value
        }
    }
}
