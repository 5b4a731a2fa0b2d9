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
    /// Whether workers read each chunk into its output slot, to be
    /// transformed there (sealing: the chunk is then read from memory once,
    /// and no separate input buffer is touched).
    let inPlace: Bool

    init(inputUnit: Int, outputUnit: Int, inPlace: Bool) {
        precondition(!inPlace || outputUnit >= inputUnit)
        self.inputUnit = inputUnit
        self.outputUnit = outputUnit
        self.inPlace = inPlace
        // One byte beyond the batch tells whether the batch holds the end;
        // in place, the input buffer is never used.
        input = .allocate(byteCount: inPlace ? 1 : STREAM.batchChunks * inputUnit + 1, alignment: 64)
        output = .allocate(byteCount: STREAM.batchChunks * outputUnit, alignment: 64)
        status = .allocate(capacity: STREAM.batchChunks)
        status.initialize(repeating: .failed)
    }

    deinit {
        input.deallocate()
        output.deallocate()
        status.deallocate()
    }

    /// The input bytes of chunk `index` (in place: at the start of its
    /// output slot).
    func chunk(_ index: Int) -> UnsafeRawBufferPointer {
        let start = index * inputUnit
        let count = min(inputUnit, inputBytes - start)
        if inPlace {
            return UnsafeRawBufferPointer(rebasing: output[(index * outputUnit)..<(index * outputUnit + count)])
        }
        return UnsafeRawBufferPointer(rebasing: input[start..<(start + count)])
    }

    /// Where chunk `index`'s result goes.
    func outputSlot(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: output[(index * outputUnit)..<((index + 1) * outputUnit)])
    }
}

/// Runs the chunks of a stream through `work` on every core while the
/// calling thread reads the batches ahead and writes the finished ones:
///
///     read k+2   ‖ work k, then k+1 (queued)
///     emit k     ‖ work k+1, then k+2
///
/// The helpers never wait for the calling thread between batches, and the
/// calling thread works on chunks whenever it would otherwise wait. `emit`
/// sees batches in order; memory is `STREAM.batchesInFlight` batches,
/// whatever the size, and nothing is allocated per chunk.
enum ChunkPipeline {
    /// - Parameters:
    ///   - inputUnit: bytes per input chunk (64 KiB plaintext, or 64 KiB + 16).
    ///   - outputUnit: room for one chunk's result.
    ///   - positional: when set, the input is this slice (and `source` is
    ///     not read); each worker reads its own chunk, so the copy out of
    ///     the page cache is spread over the cores.
    ///   - inPlace: with `positional`, each worker reads its chunk into the
    ///     chunk's output slot and `work` transforms it there (`outputUnit`
    ///     ≥ `inputUnit`); ignored when the calling thread reads `source`.
    ///   - work: processes chunk `index` of a batch (any thread) and sets
    ///     its status.
    ///   - emit: consumes a processed batch, in order.
    static func run<Source: ByteSource>(
        inputUnit: Int, outputUnit: Int, from source: inout Source, positional: PositionalSlice? = nil,
        inPlace: Bool = false, work: @escaping @Sendable (ChunkBatch, Int) -> ChunkBatch.Status,
        emit: (ChunkBatch) throws -> Void
    ) throws {
        let batchBytes = STREAM.batchChunks * inputUnit
        let inPlace = inPlace && positional != nil
        let batches = (0..<STREAM.batchesInFlight).map { _ in
            ChunkBatch(inputUnit: inputUnit, outputUnit: outputUnit, inPlace: inPlace)
        }
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
                let destination = UnsafeMutableRawBufferPointer(mutating: batch.chunk(index))
                let offset = slice.start + Int64(index * inputUnit)
                guard (try? slice.source.readExactly(into: destination, at: offset)) != nil else {
                    batch.status[index] = .readFailed
                    return
                }
            }
            batch.status[index] = work(batch, index)
        }

        // The calling thread and one helper per other core work on the
        // chunks of the batches in flight, oldest first. The calling thread
        // also reads the batches ahead and writes the finished ones, and
        // works on chunks only while it waits for the oldest to finish: so
        // when writing is expensive (a file) it writes on a core of its own,
        // and when writing is free (/dev/null) it seals like a helper.
        let board = Locked(ChunkBoard())
        let available = DispatchSemaphore(value: 0)
        let helpers = max(0, ProcessInfo.processInfo.activeProcessorCount - 1)
        /// Works on the next chunk handed out; false when none is waiting.
        @Sendable func workOnOne() -> Bool {
            guard let (batch, index) = board.withLock({ $0.handOut() }) else { return false }
            task(batch, index)
            board.withLock { $0.finish(batch) }?.signal()
            return true
        }
        let helping = DispatchGroup()
        for _ in 0..<helpers {
            DispatchQueue.global().async(group: helping) {
                while true {
                    available.wait()
                    if board.withLock({ $0.stopped }) { return }
                    while workOnOne() {}
                }
            }
        }
        defer {
            board.withLock { $0.stopped = true }
            for _ in 0..<helpers { available.signal() }
            helping.wait()
        }

        var free = batches
        var lastFilled: ChunkBatch?
        func launch() throws {
            while lastFilled?.atEnd != true, !free.isEmpty {
                let batch = free.removeFirst()
                var carried = 0
                if positional == nil, let lastFilled {
                    batch.input[0] = lastFilled.input[batchBytes]
                    carried = 1
                }
                try fill(batch, carried: carried)
                board.withLock { $0.inFlight.append(.init(batch: batch)) }
                for _ in 0..<helpers { available.signal() }
                lastFilled = batch
            }
        }
        try launch()
        while let oldest = board.withLock({ $0.inFlight.first }) {
            while !board.withLock({ $0.inFlight[0].isFinished }) {
                if !workOnOne() { oldest.finished.wait() }
            }
            board.withLock { _ = $0.inFlight.removeFirst() }
            let current = oldest.batch
            if let failed = (0..<current.chunks).first(where: { current.status[$0] == .readFailed }) {
                throw CofferError(
                    .io,
                    "reading chunk \(current.firstCounter + UInt64(failed)) of the input failed, or the file shrank while it was read"
                )
            }
            try emit(current)
            free.append(current)
            try launch()
        }
    }
}

/// What the threads of a ``ChunkPipeline`` share, under one lock: the
/// batches in flight, oldest first, and how many of each batch's chunks
/// have been handed out and finished.
struct ChunkBoard: Sendable {
    struct Entry: Sendable {
        let batch: ChunkBatch
        var handedOut = 0
        var done = 0
        /// Signalled by whoever finishes the batch's last chunk.
        let finished = DispatchSemaphore(value: 0)
        var isFinished: Bool { done == batch.chunks }
    }

    var inFlight: [Entry] = []
    var stopped = false

    /// The next chunk nobody works on yet, from the oldest batch first.
    mutating func handOut() -> (ChunkBatch, Int)? {
        guard !stopped, let index = inFlight.firstIndex(where: { $0.handedOut < $0.batch.chunks }) else { return nil }
        inFlight[index].handedOut += 1
        return (inFlight[index].batch, inFlight[index].handedOut - 1)
    }

    /// Counts a finished chunk of `batch`; returns the batch's semaphore
    /// when that was its last chunk.
    mutating func finish(_ batch: ChunkBatch) -> DispatchSemaphore? {
        guard let index = inFlight.firstIndex(where: { $0.batch === batch }) else { return nil }
        inFlight[index].done += 1
        return inFlight[index].isFinished ? inFlight[index].finished : nil
    }
}
