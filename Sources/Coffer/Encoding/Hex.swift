/// Hexadecimal, for test vectors and key material written as text.
public enum Hex {
    /// Bytes from hex digits, ignoring white space; nil for anything else
    /// (an odd number of digits, a non-hex character).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in text.unicodeScalars where !character.properties.isWhitespace {
            guard let value = UInt8(String(character), radix: 16) else { return nil }
            if let first = high {
                bytes.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return high == nil ? bytes : nil
    }

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        return String(decoding: text, as: UTF8.self)
    }
}
