import Dispatch
import Foundation

/// The buffers of one batch of chunks, allocated once per stream.
///
/// `@unchecked Sendable`: while a batch is processed, each worker touches
/// only its own chunk's input and output ranges and its own status slot;
/// the pipeline reads them only after the batch's group has been waited
/// on, and refills a batch only after it has been emitted.
final class ChunkBatch: @unchecked Sendable {
    /// What a worker made of a chunk.
    enum Status: UInt8 {
        case failed, done, doneFinal, readFailed
    }

    let input: UnsafeMutableRawBufferPointer
    let output: UnsafeMutableRawBufferPointer
    let status: UnsafeMutableBufferPointer<Status>
    let inputUnit: Int
    let outputUnit: Int
    /// What the batch holds.
    var inputBytes = 0
    var chunks = 0
    var atEnd = false
    var firstCounter: UInt64 = 0
    /// Where the batch's first byte is, when workers read for themselves.
    var slice: PositionalSlice?

    init(inputUnit: Int, outputUnit: Int) {
        self.inputUnit = inputUnit
        self.outputUnit = outputUnit
        // One byte beyond the batch tells whether the batch holds the end.
        input = .allocate(byteCount: STREAM.batchChunks * inputUnit + 1, alignment: 64)
        output = .allocate(byteCount: STREAM.batchChunks * outputUnit, alignment: 64)
        status = .allocate(capacity: STREAM.batchChunks)
        status.initialize(repeating: .failed)
    }

    deinit {
        input.deallocate()
        output.deallocate()
        status.deallocate()
    }

    /// The input bytes of chunk `index`.
    func chunk(_ index: Int) -> UnsafeRawBufferPointer {
        let start = index * inputUnit
        return UnsafeRawBufferPointer(rebasing: input[start..<min(start + inputUnit, inputBytes)])
    }

    /// Where chunk `index`'s result goes.
    func outputSlot(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: output[(index * outputUnit)..<((index + 1) * outputUnit)])
    }
}

/// Runs the chunks of a stream through `work` on every core while the
/// calling thread reads the next batch and writes the previous one:
///
///     read k+1   ‖ work k
///     emit k     ‖ work k+1
///
/// `emit` sees batches in order; memory is two batches, whatever the size,
/// and nothing is allocated per chunk.
enum ChunkPipeline {
    /// - Parameters:
    ///   - inputUnit: bytes per input chunk (64 KiB plaintext, or 64 KiB + 16).
    ///   - outputUnit: room for one chunk's result.
    ///   - positional: when set, the input is this slice (and `source` is
    ///     not read); each worker reads its own chunk, so the copy out of
    ///     the page cache is spread over the cores.
    ///   - work: processes chunk `index` of a batch (any thread) and sets
    ///     its status.
    ///   - emit: consumes a processed batch, in order.
    static func run<Source: ByteSource>(
        inputUnit: Int, outputUnit: Int, from source: inout Source, positional: PositionalSlice? = nil,
        work: @escaping @Sendable (ChunkBatch, Int) -> ChunkBatch.Status,
        emit: (ChunkBatch) throws -> Void
    ) throws {
        let batchBytes = STREAM.batchChunks * inputUnit
        let batches = [
            ChunkBatch(inputUnit: inputUnit, outputUnit: outputUnit),
            ChunkBatch(inputUnit: inputUnit, outputUnit: outputUnit),
        ]
        var counter: UInt64 = 0
        var offset: Int64 = 0

        func fill(_ batch: ChunkBatch, carried: Int) throws {
            if let positional {
                let remaining = positional.length - offset
                batch.atEnd = remaining <= Int64(batchBytes)
                batch.inputBytes = Int(min(remaining, Int64(batchBytes)))
                batch.slice = positional.dropping(offset)
                offset += Int64(batch.inputBytes)
            } else {
                let filled =
                    carried
                    + (try source.readFully(into: UnsafeMutableRawBufferPointer(rebasing: batch.input[carried...])))
                batch.atEnd = filled <= batchBytes
                batch.inputBytes = batch.atEnd ? filled : batchBytes
            }
            // An empty stream is still one (empty, final) chunk.
            batch.chunks = max(1, (batch.inputBytes + inputUnit - 1) / inputUnit)
            batch.firstCounter = counter
            counter += UInt64(batch.chunks)
        }

        let task: @Sendable (ChunkBatch, Int) -> Void = { batch, index in
            if let slice = batch.slice {
                let start = index * inputUnit
                let count = min(inputUnit, batch.inputBytes - start)
                let destination = UnsafeMutableRawBufferPointer(rebasing: batch.input[start..<(start + count)])
                guard (try? slice.source.readExactly(into: destination, at: slice.start + Int64(start))) != nil else {
                    batch.status[index] = .readFailed
                    return
                }
            }
            batch.status[index] = work(batch, index)
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
                if positional == nil { other.input[0] = current.input[batchBytes] }
                do { try fill(other, carried: positional == nil ? 1 : 0) } catch {
                    running.wait()
                    throw error
                }
                next = other
            }
            running.wait()
            if let next { running = start(next) }
            do {
                if let failed = (0..<current.chunks).first(where: { current.status[$0] == .readFailed }) {
                    throw CofferError(
                        .io,
                        "reading chunk \(current.firstCounter + UInt64(failed)) of the input failed, or the file shrank while it was read"
                    )
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
}
