/// Hexadecimal, for test vectors and key material written as text.
public enum Hex {
    /// Bytes from hex digits, ignoring white space; nil for anything else
    /// (an odd number of digits, a non-hex character).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count / 2)
        var high: UInt8?
        for character in text.unicodeScalars where !character.properties.isWhitespace {
            guard let value = value(of: character) else { return nil }
            if let first = high {
                bytes.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return high == nil ? bytes : nil
    }

    /// Lowercase digits, two per byte. Request IDs and file names go
    /// through here, so it allocates once, not once per byte.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(2 * bytes.underestimatedCount)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A digit's value, either case.
    private static func value(of scalar: Unicode.Scalar) -> UInt8? {
        switch scalar {
        case "0"..."9": UInt8(scalar.value - 0x30)
        case "a"..."f": UInt8(scalar.value - 0x61 + 10)
        case "A"..."F": UInt8(scalar.value - 0x41 + 10)
        default: nil
        }
    }
}
