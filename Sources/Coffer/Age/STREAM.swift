import Crypto
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
    /// file size: `batchesInFlight` × 16 × 64 KiB in and out (1 MiB per
    /// batch fits a core's L2; 16, 32 and 64 were measured, docs/performance.md).
    static let batchChunks = 16
    /// Batches in flight: one being written while the workers finish a
    /// second and have a third queued.
    static let batchesInFlight = 3

    static func payloadKey(fileKey: FileKey, nonce: some DataProtocol) -> SymmetricKey {
        fileKey.derive(salt: nonce, info: "payload")
    }

    /// Calls `body` with the 12-byte AEAD nonce of chunk `counter`, built on
    /// the stack.
    static func withNonce<R>(counter: UInt64, last: Bool, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var bytes: (UInt64, UInt32) = (0, 0)
        return try withUnsafeMutableBytes(of: &bytes) { raw in
            // Bytes 0…2 stay zero: 2^64 chunks is 2^80 bytes, beyond any file.
            raw.storeBytes(of: counter.bigEndian, toByteOffset: 3, as: UInt64.self)
            raw[11] = last ? 1 : 0
            return try body(UnsafeRawBufferPointer(rebasing: raw[0..<12]))
        }
    }

    /// Seals one chunk into `output` as age stores it: ciphertext ‖ tag
    /// (`plaintext.count + 16` bytes). False only if the provider failed.
    static func seal(
        _ plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
        counter: UInt64, last: Bool, key: SymmetricKey, cipher: ChunkCipher
    ) -> Bool {
        withNonce(counter: counter, last: last) { cipher.seal(plaintext, into: output, key: key, nonce: $0) }
    }

    /// Opens one sealed chunk into `output`; false when it does not
    /// authenticate as chunk `counter` with this final flag, and then
    /// nothing in `output` may be used.
    static func open(
        _ sealed: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
        counter: UInt64, last: Bool, key: SymmetricKey, cipher: ChunkCipher
    ) -> Bool {
        guard sealed.count >= tagSize else { return false }
        return withNonce(counter: counter, last: last) { cipher.open(sealed, into: output, key: key, nonce: $0) }
    }
}
