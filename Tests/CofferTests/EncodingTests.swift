import Foundation
import Synchronization
import Testing

@testable import Coffer

@Suite struct EncodingTests {
    // RFC 4648 §10 test vectors (unpadded and padded).
    @Test(arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy"),
    ])
    func base64RFC4648(_ plain: String, _ encoded: String) {
        #expect(Base64.encodeString(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
        let padded = encoded + String(repeating: "=", count: (4 - encoded.count % 4) % 4)
        #expect(Base64.decode(Array(padded.utf8), padded: true) == Array(plain.utf8))
    }

    @Test func base64RejectsNonCanonicalAndPadding() {
        #expect(Base64.decode("Zh") == nil)  // "f" with a stray low bit
        #expect(Base64.decode("Zg==") == nil)  // padding in the header encoding
        #expect(Base64.decode("Z") == nil)  // one leftover character
        #expect(Base64.decode("Zm9v\n") == nil)  // whitespace
        #expect(Base64.decode(Array("Zg=".utf8), padded: true) == nil)
        #expect(Base64.decode(Array("Zm9=v".utf8), padded: true) == nil)
        #expect(Base64.decode(Array("Zh==".utf8), padded: true) == nil)
    }

    /// base64url against Foundation's base64 with the two characters swapped
    /// and the padding dropped (RFC 4648 §5), on every length up to 70 and
    /// on bytes that use both of the characters base64url changes.
    @Test func base64URLAgreesWithFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            let expected = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == expected)
            #expect(Base64URL.decode(expected) == bytes)
        }
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
        #expect(Base64URL.decode("+/8") == nil)  // the standard alphabet's characters
        #expect(Base64URL.decode("-_8=") == nil)  // padding
        #expect(Base64URL.decode("-_9") == nil)  // a stray low bit
        #expect(Base64URL.decode("Z") == nil)
    }

    /// Hex against Foundation's `%02x` on every byte value; decoding takes
    /// either case and skips white space, and every other character below
    /// U+0180 is refused.
    @Test func hexAgreesWithFoundation() {
        let every = (0...255).map { UInt8($0) }
        let expected = every.map { String(format: "%02x", $0) }.joined()
        #expect(Hex.encode(every) == expected)
        #expect(Hex.encode(every.lazy.filter { _ in true }) == expected)  // no count known beforehand
        #expect(Hex.decode(expected) == every)
        #expect(Hex.decode(expected.uppercased()) == every)
        #expect(Hex.decode(" 0a\n\tFF ") == [0x0A, 0xFF])
        #expect(Hex.decode("") == [])
        #expect(Hex.decode("abc") == nil)  // an odd number of digits
        let digits = Set("0123456789abcdefABCDEF".unicodeScalars)
        for value in UInt32(0)..<0x180 {
            let scalar = Unicode.Scalar(value)!
            let text = "0" + String(scalar)
            if digits.contains(scalar) {
                #expect(Hex.decode(text)?.count == 1, "\(value)")
            } else if scalar.properties.isWhitespace {
                #expect(Hex.decode(text + "0") == [0], "\(value)")
            } else {
                #expect(Hex.decode(text) == nil, "\(value)")
            }
        }
    }

    /// Equal and unequal bytes through the pointer path (arrays, slices,
    /// Data) and the generic one (a lazy view), and unequal lengths.
    @Test func constantTimeComparison() {
        let bytes: [UInt8] = Array(0..<40)
        var flipped = bytes
        flipped[39] ^= 1
        #expect(ConstantTime.equal(bytes, Data(bytes)))
        #expect(ConstantTime.equal(bytes[4...], Array(4..<40)))
        #expect(ConstantTime.equal(bytes.lazy.map { $0 }, bytes))
        #expect(!ConstantTime.equal(bytes, flipped))
        #expect(!ConstantTime.equal(bytes.lazy.map { $0 }, flipped))
        #expect(!ConstantTime.equal(Data(bytes), flipped[...]))
        #expect(!ConstantTime.equal(bytes, bytes.dropLast()))
        #expect(ConstantTime.equal([UInt8](), Data()))
    }

    /// The buffer-writing encoder (used for key bytes) against Foundation,
    /// padding included, on every length up to 70.
    @Test func base64IntoABufferAgreesWithFoundation() {
        for length in 0...70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max) }
            var output = [UInt8](repeating: 0, count: (length + 2) / 3 * 4)
            let written = bytes.withUnsafeBytes { input in
                output.withUnsafeMutableBytes { Base64.encode(input, into: $0) }
            }
            #expect(written == output.count)
            #expect(String(decoding: output, as: UTF8.self) == Data(bytes).base64EncodedString())
        }
    }

    /// Empty input from many threads at once. An empty array built with
    /// `Array(unsafeUninitializedCapacity: 0)` is the runtime's shared empty
    /// storage, and setting its count writes to that one global: under
    /// ThreadSanitizer, two stanzas with empty bodies decoded at once were a
    /// data race (a CI run stopped on it). The encoder must not take that
    /// path.
    ///
    /// The threads share only a relaxed atomic, which orders nothing, so a
    /// race between any two encodes stays visible to TSan.
    @Test func base64EncodesEmptyInputFromManyThreads() {
        let nonEmpty = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 256) { _ in
            let encoded = Base64.encode([UInt8](), padded: true) + Base64.encode([UInt8](), padded: false)
            if !encoded.isEmpty { nonEmpty.add(1, ordering: .relaxed) }
        }
        #expect(nonEmpty.load(ordering: .relaxed) == 0)
    }

    /// The armor's line decoder agrees with the general strict decoder on
    /// every 4-character group over a small alphabet, valid or not.
    @Test func armorLineDecoderAgreesWithTheStrictDecoder() {
        let alphabet = Array("AZgh9+/=".utf8)
        var output = [UInt8](repeating: 0, count: 48)
        for a in alphabet {
            for b in alphabet {
                for c in alphabet {
                    for d in alphabet {
                        let line = ArraySlice(Array("Zm9v".utf8) + [a, b, c, d])
                        let expected = Base64.decode(line, padded: true)
                        let count = output.withUnsafeMutableBytes { Base64.decodePaddedLine(line, into: $0) }
                        #expect(
                            count.map { Array(output[..<$0]) } == expected, "\(String(decoding: line, as: UTF8.self))")
                    }
                }
            }
        }
    }

    // The example keys of c2sp.org/age, "The X25519 recipient type".
    @Test func specExampleKeys() throws {
        let identity = try X25519.Identity("AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX")
        #expect(identity.recipient.description == "age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwj")
        #expect(
            identity.exportSecretKey() == "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX")
    }

    // BIP 173's valid and invalid Bech32 strings.
    @Test(arguments: [
        "A12UEL5L", "a12uel5l", "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw",
        "split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w",
    ])
    func bech32Valid(_ text: String) {
        #expect(Bech32.decode(text) != nil)
    }

    @Test(arguments: [
        "pzry9x0s0muk", "1pzry9x0s0muk", "x1b4n0q5v", "li1dgmt3", "A1G7SGD8", "10a06t8", "1qzzfhee", "A12uEL5L",
    ])
    func bech32Invalid(_ text: String) {
        #expect(Bech32.decode(text) == nil)
    }

    @Test func bech32RoundTripsLongData() throws {
        let data = (0..<1200).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let text = Bech32.encode(hrp: "age1pq", data: data)
        let decoded = try #require(Bech32.decode(text))
        #expect(decoded.hrp == "age1pq" && decoded.data == data)
    }

    @Test func recipientParsingErrors() {
        #expect(throws: CofferError(.malformed, "")) {
            try X25519.Recipient("age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwk")
        }
        #expect(throws: CofferError(.malformed, "")) {
            try X25519.Recipient("AGE1ZVKYG2LQZRAA2LNJVQEJ32NKUU0UES2S82HZRYE869XEEXVN73EQUNUJWJ")
        }
        #expect(throws: CofferError(.malformed, "")) { try AgeKeys.recipient("ssh-ed25519 AAAA") }
    }
}
