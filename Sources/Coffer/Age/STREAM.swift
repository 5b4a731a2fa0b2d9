import Crypto
import Dispatch
import Foundation

/// The age payload: ChaCha20-Poly1305 over 64 KiB chunks, nonce = 11-byte
/// big-endian chunk counter ‖ final-chunk flag (c2sp.org/age, "Payload").
enum STREAM {
    static let chunkSize = 64 * 1024
    static let tagSize = 16
    static let sealedChunkSize = chunkSize + tagSize
    static let nonceSize = 16
    /// Chunks sealed or opened together, spread over the cores. Buffers
    /// are sized once from this, so memory stays constant whatever the
    /// file size: two batches in flight, 2 × 64 × 64 KiB in and out.
    static let batchChunks = 64

    static func payloadKey(fileKey: FileKey, nonce: some DataProtocol) -> SymmetricKey {
        fileKey.derive(salt: nonce, info: "payload")
    }

    /// Calls `body` with the 12-byte AEAD nonce of chunk `counter`, built on
    /// the stack.
    static func withNonce<R>(counter: UInt64, last: Bool, _ body: (ChaChaPoly.Nonce) throws -> R) throws -> R {
        var bytes: (UInt64, UInt32) = (0, 0)
        return try withUnsafeMutableBytes(of: &bytes) { raw in
            // Bytes 0…2 stay zero: 2^64 chunks is 2^80 bytes, beyond any file.
            raw.storeBytes(of: counter.bigEndian, toByteOffset: 3, as: UInt64.self)
            raw[11] = last ? 1 : 0
            return try body(ChaChaPoly.Nonce(data: UnsafeRawBufferPointer(rebasing: raw[0..<12])))
        }
    }

    /// Seals one chunk. The result is swift-crypto's `combined` form:
    /// nonce ‖ ciphertext ‖ tag; age stores only ciphertext ‖ tag.
    static func seal(_ plaintext: UnsafeRawBufferPointer, counter: UInt64, last: Bool, key: SymmetricKey) throws -> Data {
        try withNonce(counter: counter, last: last) { try ChaChaPoly.seal(plaintext, using: key, nonce: $0) }.combined
    }

    /// Opens one sealed chunk; nil when it does not authenticate as chunk
    /// `counter` with this final flag.
    static func open(_ sealed: UnsafeRawBufferPointer, counter: UInt64, last: Bool, key: SymmetricKey) -> Data? {
        guard sealed.count >= tagSize else { return nil }
        let split = sealed.count - tagSize
        return try? withNonce(counter: counter, last: last) { nonce in
            let box = try ChaChaPoly.SealedBox(
                nonce: nonce,
                ciphertext: UnsafeRawBufferPointer(rebasing: sealed[..<split]),
                tag: UnsafeRawBufferPointer(rebasing: sealed[split...]))
            return try ChaChaPoly.open(box, using: key)
        }
    }
}

