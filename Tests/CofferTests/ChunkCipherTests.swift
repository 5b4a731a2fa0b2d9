import Crypto
import Foundation
import Testing

@testable import Coffer

/// The two ChaCha20-Poly1305 providers behind the age payload compute the
/// same function: RFC 8439's own vector, agreement on random inputs, in
/// place and out of place, and every forged tag refused.
@Suite struct ChunkCipherTests {
    /// RFC 8439 §2.8.2 (AEAD_CHACHA20_POLY1305), without its AAD: the
    /// ciphertext does not depend on the AAD, so it must match; the tag is
    /// checked against swift-crypto's instead.
    @Test(arguments: ChunkCipher.allCases)
    func rfc8439Ciphertext(_ cipher: ChunkCipher) throws {
        guard cipher.isAvailable else { return }
        let key = SymmetricKey(data: hexBytes("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"))
        let nonce = hexBytes("070000004041424344454647")
        let plaintext = Array(
            "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."
                .utf8)
        let expected = hexBytes(
            "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116"
        )
        var output = [UInt8](repeating: 0, count: plaintext.count + 16)
        let sealed = plaintext.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                nonce.withUnsafeBytes { cipher.seal(input, into: out, key: key, nonce: $0) }
            }
        }
        #expect(sealed)
        #expect(Array(output.prefix(plaintext.count)) == expected)
        let reference = try ChaChaPoly.seal(plaintext, using: key, nonce: ChaChaPoly.Nonce(data: nonce))
        #expect(Array(output.suffix(16)) == Array(reference.tag))
    }

    @Test(arguments: ChunkCipher.allCases, [0, 1, 15, 16, 17, 4096, 65536])
    func providersAgreeAndRefuseForgeries(_ cipher: ChunkCipher, size: Int) throws {
        guard cipher.isAvailable else { return }
        let key = SymmetricKey(size: .bits256)
        let nonce = (0..<12).map { _ in UInt8.random(in: 0...255) }
        let plaintext = (0..<size).map { _ in UInt8.random(in: 0...255) }
        let reference = try ChaChaPoly.seal(plaintext, using: key, nonce: ChaChaPoly.Nonce(data: nonce))
        let expected = Array(reference.ciphertext) + Array(reference.tag)

        // Out of place, then in place.
        var sealed = [UInt8](repeating: 0, count: size + 16)
        #expect(
            plaintext.withUnsafeBytes { input in
                sealed.withUnsafeMutableBytes { out in
                    nonce.withUnsafeBytes { cipher.seal(input, into: out, key: key, nonce: $0) }
                }
            })
        #expect(sealed == expected)
        var inPlace = plaintext + [UInt8](repeating: 0, count: 16)
        #expect(
            inPlace.withUnsafeMutableBytes { buffer in
                nonce.withUnsafeBytes {
                    cipher.seal(UnsafeRawBufferPointer(rebasing: buffer[..<size]), into: buffer, key: key, nonce: $0)
                }
            })
        #expect(inPlace == expected)

        var opened = [UInt8](repeating: 0, count: size)
        #expect(
            expected.withUnsafeBytes { input in
                opened.withUnsafeMutableBytes { out in
                    nonce.withUnsafeBytes { cipher.open(input, into: out, key: key, nonce: $0) }
                }
            })
        #expect(opened == plaintext)

        // A flipped bit anywhere (sampled in long inputs) is refused.
        for position in Set([0, size / 2, size + 15, size + 8].filter { $0 < size + 16 }) {
            var forged = expected
            forged[position] ^= 0x10
            #expect(
                !forged.withUnsafeBytes { input in
                    opened.withUnsafeMutableBytes { out in
                        nonce.withUnsafeBytes { cipher.open(input, into: out, key: key, nonce: $0) }
                    }
                }, "bit flip at \(position) accepted")
        }
        // Too short to hold a tag.
        #expect(
            !expected.prefix(15).withUnsafeBytes { input in
                opened.withUnsafeMutableBytes { out in
                    nonce.withUnsafeBytes { cipher.open(input, into: out, key: key, nonce: $0) }
                }
            })
    }

    /// A payload known to be small is sealed by swift-crypto, so a small
    /// file never pays for loading libcrypto; an asked-for provider (the
    /// variable or a task's override) and unknown or large sizes keep the
    /// usual choice.
    @Test func smallPayloadsDoNotLoadLibcrypto() throws {
        let preferred = try ChunkCipher.current()
        if ProcessInfo.processInfo.environment["COFFER_CHACHA_PROVIDER"] == nil {
            #expect(try ChunkCipher.current(payloadBytes: 0) == .swiftCrypto)
            #expect(try ChunkCipher.current(payloadBytes: ChunkCipher.smallPayload - 1) == .swiftCrypto)
        }
        #expect(try ChunkCipher.current(payloadBytes: ChunkCipher.smallPayload) == preferred)
        #expect(try ChunkCipher.current(payloadBytes: nil) == preferred)
        for provider in ChunkCipher.allCases where provider.isAvailable {
            let chosen = try ChunkCipher.$override.withValue(provider) { try ChunkCipher.current(payloadBytes: 100) }
            #expect(chosen == provider)
        }
    }
}
