import CCofferSystem
import Crypto
import Foundation

/// ChaCha20-Poly1305 for the age payload, writing into buffers the caller
/// owns: the STREAM hot path allocates nothing per chunk.
///
/// Two providers compute the same function (RFC 8439):
/// - `.systemLibcrypto`: the system's OpenSSL, loaded with `dlopen` when
///   present (about twice swift-crypto's speed on AVX-512 machines), and
///   used only after it has agreed with swift-crypto on a random input;
/// - `.swiftCrypto`: swift-crypto, always available; it returns a fresh
///   buffer per call, which is copied into the caller's.
///
/// `COFFER_CHACHA_PROVIDER=swift-crypto` forces the fallback;
/// `COFFER_CHACHA_PROVIDER=libcrypto` makes a missing libcrypto an error
/// (CI runs the vectors and interop tests under both).
package enum ChunkCipher: String, Sendable, CaseIterable {
    case systemLibcrypto = "libcrypto"
    case swiftCrypto = "swift-crypto"

    /// `COFFER_CHACHA_PROVIDER`, read once.
    private static let requested = ProcessInfo.processInfo.environment["COFFER_CHACHA_PROVIDER"]

    /// The provider this process uses, chosen once; nil when
    /// `COFFER_CHACHA_PROVIDER=libcrypto` asks for a library that is
    /// missing or failed its self-test.
    package static let preferred: ChunkCipher? = {
        switch requested {
        case "swift-crypto": return .swiftCrypto
        case "libcrypto": return systemLibcryptoWorks ? .systemLibcrypto : nil
        default: return systemLibcryptoWorks ? .systemLibcrypto : .swiftCrypto
        }
    }()

    /// The provider for work started in this task: `override` when set
    /// (tests run the vectors under each), else `preferred`. Read once on
    /// the calling thread; the workers get it as a value.
    package static func current() throws -> ChunkCipher {
        guard let cipher = override ?? preferred else {
            throw CofferError(
                .unsupported, "COFFER_CHACHA_PROVIDER=libcrypto, but libcrypto.so.3 is missing or failed its self-test")
        }
        return cipher
    }

    /// Payloads smaller than this are sealed and opened by swift-crypto
    /// unless a provider was asked for: loading libcrypto and its
    /// self-test cost about 2.5 ms, which it wins back only after about
    /// 30 MiB on two cores (docs/performance.md).
    package static let smallPayload: Int64 = 8 << 20

    /// `current()`, for a payload of `bytes` (nil: not known ahead, a
    /// stream): a small one never loads libcrypto.
    package static func current(payloadBytes bytes: Int64?) throws -> ChunkCipher {
        if override == nil, requested == nil, let bytes, bytes < smallPayload { return .swiftCrypto }
        return try current()
    }

    @TaskLocal package static var override: ChunkCipher?

    /// Whether this provider can be used in this process.
    package var isAvailable: Bool { self == .swiftCrypto || Self.systemLibcryptoWorks }

    /// The system library is present and agrees with swift-crypto, both
    /// ways, on a random key, nonce and 1,000-byte message.
    private static let systemLibcryptoWorks: Bool = {
        guard coffer_chacha_system_available() == 1 else { return false }
        let key = SymmetricKey(size: .bits256)
        let nonce = ChaChaPoly.Nonce()
        var message = [UInt8](repeating: 0, count: 1000)
        message.withUnsafeMutableBytes { randomBytes($0) }
        guard let reference = try? ChaChaPoly.seal(message, using: key, nonce: nonce) else { return false }
        var ciphertext = [UInt8](repeating: 0, count: message.count)
        var tag = [UInt8](repeating: 0, count: 16)
        var opened = [UInt8](repeating: 0, count: message.count)
        let sealed = key.withUnsafeBytes { key in
            nonce.withUnsafeBytes { nonce in
                coffer_chacha_system_seal(key.baseAddress, nonce.baseAddress, message, message.count, &ciphertext, &tag)
            }
        }
        let referenceCiphertext = Array(reference.ciphertext)
        let referenceTag = Array(reference.tag)
        let openedOK = key.withUnsafeBytes { key in
            nonce.withUnsafeBytes { nonce in
                coffer_chacha_system_open(
                    key.baseAddress, nonce.baseAddress, referenceCiphertext, referenceCiphertext.count, referenceTag,
                    &opened)
            }
        }
        var forged = referenceTag
        forged[0] ^= 1
        let forgedOK = key.withUnsafeBytes { key in
            nonce.withUnsafeBytes { nonce in
                coffer_chacha_system_open(
                    key.baseAddress, nonce.baseAddress, referenceCiphertext, referenceCiphertext.count, forged, &opened)
            }
        }
        return sealed == 1 && ciphertext == referenceCiphertext && tag == referenceTag
            && openedOK == 1 && opened == message && forgedOK == 0
    }()

    /// Seals `input` into `output`: ciphertext, then the 16-byte tag.
    /// `output` holds at least `input.count + 16` bytes and may start at
    /// `input`'s address. Returns false only if the provider failed.
    package func seal(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
        key: SymmetricKey, nonce: UnsafeRawBufferPointer
    ) -> Bool {
        precondition(output.count >= input.count + 16 && nonce.count == 12)
        switch self {
        case .systemLibcrypto:
            return key.withUnsafeBytes { key in
                coffer_chacha_system_seal(
                    key.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count,
                    output.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    output.baseAddress!.assumingMemoryBound(to: UInt8.self) + input.count) == 1
            }
        case .swiftCrypto:
            guard let box = try? ChaChaPoly.seal(input, using: key, nonce: ChaChaPoly.Nonce(data: nonce)) else {
                return false
            }
            box.ciphertext.withUnsafeBytes {
                if let base = $0.baseAddress { output.baseAddress!.copyMemory(from: base, byteCount: $0.count) }
            }
            box.tag.withUnsafeBytes {
                (output.baseAddress! + input.count).copyMemory(from: $0.baseAddress!, byteCount: 16)
            }
            return true
        }
    }

    /// Opens `input` (ciphertext, then the 16-byte tag) into `output`, which
    /// holds at least `input.count - 16` bytes. Returns false when it does
    /// not authenticate; `output` then holds nothing the caller may use.
    package func open(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
        key: SymmetricKey, nonce: UnsafeRawBufferPointer
    ) -> Bool {
        guard input.count >= 16 else { return false }
        let length = input.count - 16
        precondition(output.count >= length && nonce.count == 12)
        switch self {
        case .systemLibcrypto:
            // An empty plaintext may come with an empty output buffer.
            var spare: UInt8 = 0
            return withUnsafeMutablePointer(to: &spare) { spare in
                key.withUnsafeBytes { key in
                    coffer_chacha_system_open(
                        key.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        input.baseAddress!.assumingMemoryBound(to: UInt8.self), length,
                        input.baseAddress!.assumingMemoryBound(to: UInt8.self) + length,
                        output.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? spare) == 1
                }
            }
        case .swiftCrypto:
            guard
                let box = try? ChaChaPoly.SealedBox(
                    nonce: ChaChaPoly.Nonce(data: nonce),
                    ciphertext: UnsafeRawBufferPointer(rebasing: input[..<length]),
                    tag: UnsafeRawBufferPointer(rebasing: input[length...])),
                let plaintext = try? ChaChaPoly.open(box, using: key)
            else { return false }
            plaintext.withUnsafeBytes {
                if let base = $0.baseAddress, $0.count > 0 {
                    output.baseAddress!.copyMemory(from: base, byteCount: $0.count)
                }
            }
            return true
        }
    }
}
