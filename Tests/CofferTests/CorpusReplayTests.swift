import CofferTesting
import Crypto
import Foundation
import Testing

@testable import Coffer

/// The fuzz corpus, replayed on every test run, with a malleability
/// property: whatever a parser accepts, serialising it again gives back the
/// very bytes it read. A format with two encodings of one value lets an
/// attacker change bytes without changing meaning (and breaks anything that
/// hashes or compares the encoding), so every parser must be canonical.
///
/// The corpus is the seed corpus of `fuzz/run.sh` (the age test kit's file
/// bodies) plus valid values of each format, each also mutated
/// deterministically: every bit flip of short inputs, sampled flips of long
/// ones, truncations and a duplicated line.
@Suite struct CorpusReplayTests {
    /// Deterministic mutations of `input`.
    static func mutations(of input: [UInt8], flips: Int = 64) -> [[UInt8]] {
        var out: [[UInt8]] = [input]
        guard !input.isEmpty else { return out }
        let step = max(1, input.count * 8 / flips)
        for bit in stride(from: 0, to: input.count * 8, by: step) {
            var copy = input
            copy[bit / 8] ^= 1 << (bit % 8)
            out.append(copy)
        }
        for cut in Set([1, input.count / 2, input.count - 1]) where cut > 0 && cut < input.count {
            out.append(Array(input.prefix(cut)))
        }
        if let newline = input.firstIndex(of: 0x0A) {
            out.append(Array(input[...newline]) + input)
        }
        return out
    }

    static let ageFiles: [[UInt8]] = CCTVTests.vectors.filter { $0.compression == nil }.map { Array($0.body) }

    /// An age header that parses is exactly the bytes it was read from.
    @Test func headersAndStanzasAreCanonical() throws {
        var parsed = 0
        for file in Self.ageFiles {
            for input in Self.mutations(of: Array(file.prefix(4096))) {
                var reader = LineReader(BufferSource(input))
                guard let header = try? Header.read(from: &reader) else { continue }
                parsed += 1
                #expect(Array(input.prefix(header.encoded.count)) == header.encoded, "a header parsed from other bytes")
                for stanza in header.stanzas {
                    #expect(
                        try Stanza(type: stanza.type, arguments: stanza.arguments, body: stanza.body).encoded
                            == stanza.encoded)
                }
            }
        }
        #expect(parsed > 100, "too few headers parsed (\(parsed)) for the property to mean anything")
    }

    /// Armor that decodes is the armor this library writes for the same
    /// bytes, up to what age allows: whitespace around it, CRLF line ends.
    @Test func armorIsCanonical() throws {
        let identity = X25519.Identity()
        var seeds = try [0, 1, 47, 48, 49, 100].map {
            try Array(Age.encrypt([UInt8](repeating: 0x41, count: $0), to: [identity.recipient], armored: true))
        }
        seeds += Self.ageFiles.filter { $0.starts(with: Array("-----BEGIN".utf8)) }
        var decoded = 0
        for seed in seeds {
            for input in Self.mutations(of: seed, flips: 128) {
                var outer = LineReader(BufferSource(input))
                guard (try? Armor.detect(&outer)) == true else { continue }
                var reader = ArmorReader(outer)
                var plain: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                do {
                    while true {
                        let count = try buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
                        if count == 0 { break }
                        plain += buffer.prefix(count)
                    }
                } catch { continue }
                decoded += 1
                var writer = ArmorWriter(BufferSink())
                try plain.withUnsafeBytes { try writer.write($0) }
                try writer.finish()
                // age allows CRLF line ends (all of them, never mixed): the only
                // other encoding of the same armor.
                let text = String(decoding: input, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
                let trimmed = Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
                let rewritten = Array(
                    String(decoding: writer.sink.bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                        .utf8)
                #expect(rewritten == trimmed, "armor decoded from bytes this library would not write")
            }
        }
        #expect(decoded >= seeds.count)
    }

    /// A sealed value's text form that parses is the text form of what it
    /// parsed to; its binary form round-trips through the key ring.
    @Test func sealedValuesAreCanonical() throws {
        let ring = KeyRing()
        var accepted = 0
        for size in [0, 1, 16, 100] {
            let sealed = try ring.seal([UInt8](repeating: 7, count: size), context: Array("corpus".utf8))
            let text = Array(SealedValue.text(sealed).utf8)
            for input in Self.mutations(of: text, flips: 256) {
                // Bytes without the text prefix are taken as the binary form.
                guard input.starts(with: Array(SealedValue.textPrefix.utf8)),
                    let binary = try? SealedValue.binary(input)
                else { continue }
                accepted += 1
                // The canonical text, or it and one line ending.
                let canonical = Array(SealedValue.text(binary).utf8)
                #expect(
                    [canonical, canonical + [0x0A], canonical + [0x0D, 0x0A]].contains(input),
                    "a text form other than the canonical one was accepted")
            }
            for input in Self.mutations(of: Array(sealed), flips: 256) {
                // Only the untouched value may open: any other accepted
                // bytes would be a second encoding of the same plaintext.
                if (try? ring.open(input, context: Array("corpus".utf8))) != nil {
                    #expect(input == Array(sealed), "a changed sealed value opened")
                }
            }
        }
        #expect(accepted >= 4)
    }

    /// Key lines: an identity or recipient that parses prints back as the
    /// line it was read from (Bech32 is case-insensitive, so the case is not
    /// compared).
    @Test func keyTextIsCanonical() throws {
        // (a valid line, how to parse one and print it back)
        let x25519 = X25519.Identity()
        let hybrid = try MLKEM768X25519.Identity()
        let kinds: [(String, (String) throws -> String)] = [
            (x25519.exportSecretKey(), { try X25519.Identity($0).exportSecretKey() }),
            (x25519.recipient.description, { try X25519.Recipient($0).description }),
            (hybrid.exportSecretKey(), { try MLKEM768X25519.Identity($0).exportSecretKey() }),
            (hybrid.recipient.description, { try MLKEM768X25519.Recipient($0).description }),
        ]
        var accepted = 0
        for (text, parse) in kinds {
            for input in Self.mutations(of: Array(text.utf8), flips: 512) {
                let line = String(decoding: input, as: UTF8.self)
                guard let printed = try? parse(line) else { continue }
                accepted += 1
                #expect(
                    printed.lowercased() == line.lowercased(), "\(line.prefix(24))… printed as \(printed.prefix(24))…")
            }
        }
        #expect(accepted >= kinds.count)
    }
}
