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
    /// file size: two batches in flight, 2 × 16 × 64 KiB in and out.
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

/// The buffers of one batch of chunks.
///
/// `@unchecked Sendable`: while a batch is processed, each worker touches
/// only its own chunk's input range and its own `results`/`finals` slot;
/// the pipeline reads them only after the batch's group has been waited on,
/// and refills a batch only after it has been emitted.
final class ChunkBatch: @unchecked Sendable {
    let input: UnsafeMutableRawBufferPointer
    let results: UnsafeMutableBufferPointer<Data?>
    /// Per chunk: whether it authenticated as the final one (decryption).
    let finals: UnsafeMutableBufferPointer<Bool>
    /// What the batch holds, set by the reader.
    var inputBytes = 0
    var chunks = 0
    var atEnd = false
    var firstCounter: UInt64 = 0

    init(inputSize: Int) {
        input = .allocate(byteCount: inputSize, alignment: 16)
        results = .allocate(capacity: STREAM.batchChunks)
        results.initialize(repeating: nil)
        finals = .allocate(capacity: STREAM.batchChunks)
        finals.initialize(repeating: false)
    }

    deinit {
        input.deallocate()
        results.deinitialize()
        results.deallocate()
        finals.deallocate()
    }
}

/// Runs the chunks of a stream through `work` on every core while the
/// calling thread reads the next batch and writes the previous one:
///
///     read k+1   ‖ work k
///     emit k     ‖ work k+1
///
/// `emit` sees batches in order; memory is two batches, whatever the size.
enum ChunkPipeline {
    /// - Parameters:
    ///   - unit: bytes per input chunk (64 KiB plaintext, or 64 KiB + 16).
    ///   - work: processes chunk `index` of a batch (any thread).
    ///   - emit: consumes a processed batch, in order; returns normally to go on.
    static func run<Source: ByteSource>(
        unit: Int, from source: inout Source,
        work: @escaping @Sendable (ChunkBatch, Int) -> Void,
        emit: (ChunkBatch) throws -> Void
    ) throws {
        let batchBytes = STREAM.batchChunks * unit
        // One byte beyond the batch tells whether the batch holds the end.
        let batches = [ChunkBatch(inputSize: batchBytes + 1), ChunkBatch(inputSize: batchBytes + 1)]
        var counter: UInt64 = 0

        func fill(_ batch: ChunkBatch, carried: Int) throws {
            let filled = carried + (try source.readFully(into: UnsafeMutableRawBufferPointer(rebasing: batch.input[carried...])))
            batch.atEnd = filled <= batchBytes
            batch.inputBytes = batch.atEnd ? filled : batchBytes
            // An empty stream is still one (empty, final) chunk.
            batch.chunks = max(1, (batch.inputBytes + unit - 1) / unit)
            batch.firstCounter = counter
            counter += UInt64(batch.chunks)
        }

        func start(_ batch: ChunkBatch) -> DispatchGroup {
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) {
                if batch.chunks == 1 {
                    work(batch, 0)
                } else {
                    DispatchQueue.concurrentPerform(iterations: batch.chunks) { work(batch, $0) }
                }
            }
            return group
        }

        var current = batches[0]
        try fill(current, carried: 0)
        var running = start(current)
        var slot = 0
        while true {
            var next: ChunkBatch?
            if !current.atEnd {
                let other = batches[1 - slot]
                other.input[0] = current.input[batchBytes]
                do { try fill(other, carried: 1) } catch {
                    running.wait()
                    throw error
                }
                next = other
            }
            running.wait()
            if let next { running = start(next) }
            do { try emit(current) } catch {
                running.wait()
                throw error
            }
            guard let next else { return }
            current = next
            slot = 1 - slot
        }
    }
}
