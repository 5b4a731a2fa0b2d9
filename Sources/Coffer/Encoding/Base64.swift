import Foundation

/// Standard base64 (RFC 4648 §4) with the strictness age needs: canonical
/// encodings only (unused trailing bits must be zero, RFC 4648 §3.5), and
/// padding either forbidden (the header) or required (the armor).
package enum Base64 {
    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static let values = decodingTable(alphabet)

    /// Each byte's value in `alphabet`; 0xFF marks a byte outside it.
    static func decodingTable(_ alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }

    static func isBase64Character(_ byte: UInt8) -> Bool { values[Int(byte)] != 0xFF }

    /// Encodes `bytes`; `padded` adds `=` to a multiple of four characters.
    static func encode(_ bytes: some Collection<UInt8>, padded: Bool) -> [UInt8] {
        encode(bytes, padded: padded, alphabet: alphabet)
    }

    static func encode(_ bytes: some Collection<UInt8>, padded: Bool, alphabet: [UInt8]) -> [UInt8] {
        let input = Array(bytes)
        // Not through `unsafeUninitializedCapacity` when empty: with a
        // capacity of 0 the standard library (Swift 6.3) writes the count
        // into the runtime's one shared empty array, a data race between
        // threads that ThreadSanitizer reports (as swiftlang/swift#27808
        // once mended for other array paths).
        guard !input.isEmpty else { return [] }
        let room = (input.count + 2) / 3 * 4
        return [UInt8](unsafeUninitializedCapacity: room) { output, count in
            count = input.withUnsafeBytes { input in
                encode(input, into: UnsafeMutableRawBufferPointer(output), padded: padded, alphabet: alphabet)
            }
        }
    }

    /// Encodes `bytes` with padding straight into `output` (room for
    /// `(bytes.count + 2) / 3 * 4` bytes); returns the count written. For
    /// secrets, which this never copies into a `String` or an array.
    package static func encode(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        encode(bytes, into: output, padded: true, alphabet: alphabet)
    }

    /// The one encoder: without padding, the last group is cut after its
    /// last significant character.
    static func encode(
        _ bytes: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, padded: Bool, alphabet: [UInt8]
    ) -> Int {
        precondition(output.count >= (bytes.count + 2) / 3 * 4)
        var written = 0
        var index = 0
        while index < bytes.count {
            let left = bytes.count - index
            let b0 = bytes[index]
            let b1 = left > 1 ? bytes[index + 1] : 0
            let b2 = left > 2 ? bytes[index + 2] : 0
            output[written] = alphabet[Int(b0 >> 2)]
            output[written + 1] = alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)]
            written += 2
            if left > 1 || padded {
                output[written] = left > 1 ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "=")
                written += 1
            }
            if left > 2 || padded {
                output[written] = left > 2 ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "=")
                written += 1
            }
            index += 3
        }
        return written
    }

    static func encodeString(_ bytes: some Collection<UInt8>, padded: Bool = false) -> String {
        String(decoding: encode(bytes, padded: padded), as: UTF8.self)
    }

    /// Decodes canonical base64, or returns nil.
    ///
    /// With `padded == false`, any `=` is rejected (age's header encoding);
    /// with `padded == true`, the length must be a multiple of four and
    /// padding may only close the input.
    static func decode(_ text: some Collection<UInt8>, padded: Bool) -> [UInt8]? {
        decode(text, padded: padded, values: values)
    }

    static func decode(_ text: some Collection<UInt8>, padded: Bool, values: [UInt8]) -> [UInt8]? {
        var characters = Array(text)
        if padded {
            guard characters.count % 4 == 0 else { return nil }
            var padding = 0
            while padding < 2, characters.last == UInt8(ascii: "=") {
                characters.removeLast()
                padding += 1
            }
        }
        // A single leftover character cannot encode a byte.
        guard characters.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(characters.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in characters {
            let value = values[Int(character)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Canonical: the bits left over must be zero.
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return output
    }

    /// Decodes one armor line — padded, canonical, a multiple of four
    /// characters — straight into `output` (room for 3/4 of the line).
    /// Returns the byte count, or nil for anything not canonical.
    static func decodePaddedLine(_ line: ArraySlice<UInt8>, into output: UnsafeMutableRawBufferPointer) -> Int? {
        guard line.count % 4 == 0 else { return nil }
        var written = 0
        var index = line.startIndex
        while index < line.endIndex {
            let last = index + 4 == line.endIndex
            let c0 = values[Int(line[index])]
            let c1 = values[Int(line[index + 1])]
            let p2 = line[index + 2] == UInt8(ascii: "=")
            let p3 = line[index + 3] == UInt8(ascii: "=")
            let c2 = p2 ? 0 : values[Int(line[index + 2])]
            let c3 = p3 ? 0 : values[Int(line[index + 3])]
            guard c0 != 0xFF, c1 != 0xFF, c2 != 0xFF, c3 != 0xFF else { return nil }
            // Padding only at the very end, "==" or "=", with zero spare bits.
            if p2 || p3 {
                guard last, p3, !p2 || (c1 & 0x0F) == 0, p2 || (c2 & 0x03) == 0 else { return nil }
            }
            output[written] = c0 << 2 | c1 >> 4
            written += 1
            if !p2 {
                output[written] = c1 << 4 | c2 >> 2
                written += 1
            }
            if !p3 {
                output[written] = c2 << 6 | c3
                written += 1
            }
            index += 4
        }
        return written
    }

    static func decode(_ text: String, padded: Bool = false) -> [UInt8]? {
        decode(Array(text.utf8), padded: padded)
    }
}

/// base64url without padding (RFC 4648 §5, as RFC 7515 §2 uses it): sign-in
/// tokens, DPoP proofs, key thumbprints, operator tokens and the text form
/// of sealed values. Decoding accepts canonical input only: no padding, no
/// character outside the alphabet, no set bits after the last byte.
package enum Base64URL {
    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    static let values = Base64.decodingTable(alphabet)

    package static func encode(_ bytes: some Collection<UInt8>) -> String {
        String(decoding: Base64.encode(bytes, padded: false, alphabet: alphabet), as: UTF8.self)
    }

    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        Base64.decode(text.utf8, padded: false, values: values)
    }

    package static func decode(bytes: some Collection<UInt8>) -> [UInt8]? {
        Base64.decode(bytes, padded: false, values: values)
    }
}
