import Foundation
import Crypto
import Dispatch

/// The age payload: ChaCha20-Poly1305 over 64 KiB chunks, nonce = 11-byte
/// big-endian chunk counter ‖ final-chunk flag (c2sp.org/age, "Payload").
enum STREAM {
    static let chunkSize = 64 * 1024
    static let tagSize = 16
    static let sealedChunkSize = chunkSize + tagSize
    static let nonceSize = 16
    /// Chunks sealed or opened together, one per core at a time. The
    /// buffers are sized once from this, so memory stays constant whatever
    /// the file size: 2 × 16 × 64 KiB.
    static let batchChunks = 16

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

    /// Seals one chunk into `output` (plaintext count + 16 bytes).
    static func seal(_ plaintext: UnsafeRawBufferPointer, counter: UInt64, last: Bool,
                     key: SymmetricKey, into output: UnsafeMutableRawBufferPointer) throws {
        let box = try withNonce(counter: counter, last: last) { try ChaChaPoly.seal(plaintext, using: key, nonce: $0) }
        // `combined` is nonce ‖ ciphertext ‖ tag; the nonce is implicit in age.
        box.combined.withUnsafeBytes { combined in
            output.baseAddress!.copyMemory(from: combined.baseAddress! + 12, byteCount: combined.count - 12)
        }
    }

    /// Opens one sealed chunk into `output`; returns the plaintext count, or
    /// nil when it does not authenticate as chunk `counter` with this flag.
    static func open(_ sealed: UnsafeRawBufferPointer, counter: UInt64, last: Bool,
                     key: SymmetricKey, into output: UnsafeMutableRawBufferPointer) -> Int? {
        guard sealed.count >= tagSize else { return nil }
        let split = sealed.count - tagSize
        guard let plaintext = try? withNonce(counter: counter, last: last, { nonce in
            let box = try ChaChaPoly.SealedBox(
                nonce: nonce,
                ciphertext: UnsafeRawBufferPointer(rebasing: sealed[..<split]),
                tag: UnsafeRawBufferPointer(rebasing: sealed[split...]))
            return try ChaChaPoly.open(box, using: key)
        }) else { return nil }
        plaintext.withUnsafeBytes { output.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        return plaintext.count
    }
}

/// Two fixed buffers shared by the workers of one batch.
///
/// `@unchecked Sendable`: in `forEachChunk` every iteration touches only its
/// own chunk's slots, and the caller reads them only after
/// `concurrentPerform` has returned, so no two threads share a byte.
final class ChunkBuffers: @unchecked Sendable {
    let input: UnsafeMutableRawBufferPointer
    let output: UnsafeMutableRawBufferPointer
    /// Per-chunk result: a plaintext/ciphertext length, or -1 for failure.
    let lengths: UnsafeMutableBufferPointer<Int>
    /// Per-chunk: whether the chunk authenticated as the final one.
    let finals: UnsafeMutableBufferPointer<Bool>

    init(inputSize: Int, outputSize: Int, chunks: Int) {
        input = .allocate(byteCount: inputSize, alignment: 16)
        output = .allocate(byteCount: outputSize, alignment: 16)
        lengths = .allocate(capacity: chunks)
        finals = .allocate(capacity: chunks)
    }

    deinit {
        input.deallocate()
        output.deallocate()
        lengths.deallocate()
        finals.deallocate()
    }

    /// Runs `body(i)` for every chunk of the batch, on every core when
    /// there is more than one chunk.
    func forEachChunk(_ count: Int, _ body: @Sendable (Int) -> Void) {
        if count == 1 { body(0) } else { DispatchQueue.concurrentPerform(iterations: count, execute: body) }
    }
}
