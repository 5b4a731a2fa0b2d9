import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The buffers of one batch of chunks.
///
/// `@unchecked Sendable`: while a batch is processed, each worker touches
/// only its own chunk's input range and its own per-chunk slots; the
/// pipeline reads them only after the batch's group has been waited on,
/// and refills a batch only after it has been emitted.
final class ChunkBatch: @unchecked Sendable {
    let input: UnsafeMutableRawBufferPointer
    let results: UnsafeMutableBufferPointer<Data?>
    /// Per chunk: whether it authenticated as the final one (decryption).
    let finals: UnsafeMutableBufferPointer<Bool>
    /// Per chunk: whether reading it from the file failed.
    let readFailed: UnsafeMutableBufferPointer<Bool>
    /// What the batch holds.
    var inputBytes = 0
    var chunks = 0
    var atEnd = false
    var firstCounter: UInt64 = 0
    /// File offset of the batch's first byte, when workers read for themselves.
    var fileOffset: Int64 = 0

    init(inputSize: Int) {
        input = .allocate(byteCount: inputSize, alignment: 16)
        results = .allocate(capacity: STREAM.batchChunks)
        results.initialize(repeating: nil)
        finals = .allocate(capacity: STREAM.batchChunks)
        finals.initialize(repeating: false)
        readFailed = .allocate(capacity: STREAM.batchChunks)
        readFailed.initialize(repeating: false)
    }

    deinit {
        input.deallocate()
        results.deinitialize()
        results.deallocate()
        finals.deallocate()
        readFailed.deallocate()
    }

    /// The input bytes of chunk `index`.
    func chunk(_ index: Int, unit: Int) -> UnsafeRawBufferPointer {
        let start = index * unit
        return UnsafeRawBufferPointer(rebasing: input[start..<min(start + unit, inputBytes)])
    }
}

/// A byte range of a regular file that workers read with `pread`, each its
/// own chunk, so that the copy out of the page cache is spread over the
/// cores instead of serialised on the caller's thread.
struct FileRange: Sendable {
    let descriptor: Int32
    let start: Int64
    let length: Int64
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
    ///   - file: when set, the input is this file range (and `source` is
    ///     not read); workers read their own chunks.
    ///   - work: processes chunk `index` of a batch (any thread).
    ///   - emit: consumes a processed batch, in order; returns normally to go on.
    static func run<Source: ByteSource>(
        unit: Int, from source: inout Source, file: FileRange? = nil,
        work: @escaping @Sendable (ChunkBatch, Int) -> Void,
        emit: (ChunkBatch) throws -> Void
    ) throws {
        let batchBytes = STREAM.batchChunks * unit
        // One byte beyond the batch tells whether the batch holds the end.
        let batches = [ChunkBatch(inputSize: batchBytes + 1), ChunkBatch(inputSize: batchBytes + 1)]
        var counter: UInt64 = 0
        var offset: Int64 = 0

        func fill(_ batch: ChunkBatch, carried: Int) throws {
            if let file {
                let remaining = file.length - offset
                batch.atEnd = remaining <= Int64(batchBytes)
                batch.inputBytes = Int(min(remaining, Int64(batchBytes)))
                batch.fileOffset = file.start + offset
                offset += Int64(batch.inputBytes)
            } else {
                let filled = carried + (try source.readFully(into: UnsafeMutableRawBufferPointer(rebasing: batch.input[carried...])))
                batch.atEnd = filled <= batchBytes
                batch.inputBytes = batch.atEnd ? filled : batchBytes
            }
            // An empty stream is still one (empty, final) chunk.
            batch.chunks = max(1, (batch.inputBytes + unit - 1) / unit)
            batch.firstCounter = counter
            counter += UInt64(batch.chunks)
        }

        let task: @Sendable (ChunkBatch, Int) -> Void = { batch, index in
            if let file {
                batch.readFailed[index] = !readChunk(file, batch: batch, index: index, unit: unit)
                guard !batch.readFailed[index] else {
                    batch.results[index] = nil
                    return
                }
            }
            work(batch, index)
        }

        func start(_ batch: ChunkBatch) -> DispatchGroup {
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) {
                if batch.chunks == 1 {
                    task(batch, 0)
                } else {
                    DispatchQueue.concurrentPerform(iterations: batch.chunks) { task(batch, $0) }
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
                if file == nil { other.input[0] = current.input[batchBytes] }
                do { try fill(other, carried: file == nil ? 1 : 0) } catch {
                    running.wait()
                    throw error
                }
                next = other
            }
            running.wait()
            if let next { running = start(next) }
            do {
                if let failed = (0..<current.chunks).first(where: { current.readFailed[$0] }) {
                    throw CofferError(.io, "reading chunk \(current.firstCounter + UInt64(failed)) of the input failed, or the file shrank while it was read")
                }
                try emit(current)
            } catch {
                running.wait()
                throw error
            }
            guard let next else { return }
            current = next
            slot = 1 - slot
        }
    }

    /// Reads chunk `index` of `batch` from the file; false on error or a
    /// short read (the file shrank).
    private static func readChunk(_ file: FileRange, batch: ChunkBatch, index: Int, unit: Int) -> Bool {
        let start = index * unit
        let count = min(unit, batch.inputBytes - start)
        var done = 0
        while done < count {
            let result = pread(file.descriptor, batch.input.baseAddress! + start + done, count - done,
                               off_t(batch.fileOffset + Int64(start + done)))
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { return false }
            done += result
        }
        return true
    }
}
