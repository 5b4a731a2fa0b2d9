import Foundation

/// Bech32 as BIP 173 specifies it, without its 90-character limit (age's
/// post-quantum keys are far longer). Strings are all lowercase or all
/// uppercase; the checksum is always computed over the lowercase form.
enum Bech32 {
    private static let charset: [UInt8] = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    private static let values: [Int8] = {
        var table = [Int8](repeating: -1, count: 128)
        for (index, byte) in charset.enumerated() { table[Int(byte)] = Int8(index) }
        return table
    }()

    private static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]
        var checksum: UInt32 = 1
        for value in values {
            let top = checksum >> 25
            checksum = (checksum & 0x1ff_ffff) << 5 ^ UInt32(value)
            for index in 0..<5 where (top >> UInt32(index)) & 1 == 1 {
                checksum ^= generator[index]
            }
        }
        return checksum
    }

    private static func expand(_ hrp: [UInt8]) -> [UInt8] {
        hrp.map { $0 >> 5 } + [0] + hrp.map { $0 & 31 }
    }

    /// Regroups bits; `pad` is true when encoding. Decoding rejects padding
    /// of more than four bits or non-zero padding bits.
    private static func convert(_ data: [UInt8], from: Int, to: Int, pad: Bool) -> [UInt8]? {
        var accumulator = 0
        var bits = 0
        var output: [UInt8] = []
        let maxValue = (1 << to) - 1
        for value in data {
            accumulator = accumulator << from | Int(value)
            bits += from
            while bits >= to {
                bits -= to
                output.append(UInt8((accumulator >> bits) & maxValue))
            }
            accumulator &= (1 << bits) - 1
        }
        if pad {
            if bits > 0 { output.append(UInt8((accumulator << (to - bits)) & maxValue)) }
        } else if bits >= from || accumulator != 0 {
            return nil
        }
        return output
    }

    /// Encodes `data` under `hrp`, lowercase unless `uppercase` is set.
    static func encode(hrp: String, data: some Collection<UInt8>, uppercase: Bool = false) -> String {
        let hrpBytes = Array(hrp.lowercased().utf8)
        let words = convert(Array(data), from: 8, to: 5, pad: true)!
        let mod = polymod(expand(hrpBytes) + words + [0, 0, 0, 0, 0, 0]) ^ 1
        let checksum = (0..<6).map { UInt8((mod >> UInt32(5 * (5 - $0))) & 31) }
        let text = hrp.lowercased() + "1" + String(decoding: (words + checksum).map { charset[Int($0)] }, as: UTF8.self)
        return uppercase ? text.uppercased() : text
    }

    /// Decodes a Bech32 string into its (lowercase) HRP and data, or nil.
    static func decode(_ text: String) -> (hrp: String, data: [UInt8])? {
        let bytes = Array(text.utf8)
        guard bytes.allSatisfy({ $0 >= 33 && $0 <= 126 }) else { return nil }
        let hasLower = bytes.contains { $0 >= 97 && $0 <= 122 }
        let hasUpper = bytes.contains { $0 >= 65 && $0 <= 90 }
        guard !(hasLower && hasUpper) else { return nil }
        let lower = bytes.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
        guard let separator = lower.lastIndex(of: UInt8(ascii: "1")),
            separator >= 1, lower.count - separator - 1 >= 6
        else { return nil }
        let hrp = Array(lower[..<separator])
        var words: [UInt8] = []
        for byte in lower[(separator + 1)...] {
            let value = values[Int(byte)]
            guard value >= 0 else { return nil }
            words.append(UInt8(value))
        }
        guard polymod(expand(hrp) + words) == 1 else { return nil }
        guard let data = convert(Array(words.dropLast(6)), from: 5, to: 8, pad: false) else { return nil }
        return (String(decoding: hrp, as: UTF8.self), data)
    }
}
