import Coffer
import Foundation

extension RecordStore {
    /// `transform` over `items` on every core, in order; the first error is
    /// thrown. Each core takes one contiguous slice, so the only shared
    /// state is one slot per core.
    static func parallelMap<T: Sendable, R: Sendable>(_ items: [T], _ transform: @Sendable (T) throws -> R) throws
        -> [R]
    {
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, items.count))
        guard workers > 1 else { return try items.map(transform) }
        let slices = Locked([Result<[R], any Error>?](repeating: nil, count: workers))
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            let range = items.count * worker / workers..<items.count * (worker + 1) / workers
            let result = Result { try items[range].map(transform) }
            slices.withLock { $0[worker] = result }
        }
        return try slices.withLock { $0 }.flatMap { try $0!.get() }
    }

    /// Maps `items` in chunks of `chunk` and hands each chunk's results to
    /// `consume`, in order, on the calling thread (see ``ChunkPipeline``).
    /// An error from either stops the helpers and is thrown.
    static func pipeline<T: Sendable, R: Sendable>(
        _ items: [T], chunk: Int, map transform: @escaping @Sendable (T) throws -> R,
        consume: (ArraySlice<T>, [R]) throws -> Void
    ) throws {
        try ChunkPipeline(items, chunk: chunk, map: transform).consume(consume)
    }

    /// `items` mapped in chunks, started at once: helper threads (one per
    /// core but the caller's) map chunks ahead; ``consume(_:)`` hands each
    /// chunk's results over in order on the calling thread, and whenever
    /// the next chunk is not ready, that thread maps an unclaimed one
    /// itself instead of waiting, so every core stays busy whether mapping
    /// or consuming is the slower. One made before its consumer is ready
    /// maps ahead meanwhile; ``stop()`` ends one that is not wanted.
    final class ChunkPipeline<T: Sendable, R: Sendable>: Sendable {
        private let items: [T]
        private let chunk: Int
        private let chunks: Int
        private let transform: @Sendable (T) throws -> R
        private let board = Locked(PipelineBoard<R>())
        private let finished = DispatchSemaphore(value: 0)
        private let group = DispatchGroup()

        init(_ items: [T], chunk: Int, map transform: @escaping @Sendable (T) throws -> R) {
            self.items = items
            self.chunk = chunk
            self.chunks = (items.count + chunk - 1) / chunk
            self.transform = transform
            // One chunk is the caller's alone: a helper would only race it
            // for the chunk and cost a thread's wake-up (a single put).
            let helpers = chunks < 2 ? 0 : min(chunks, ProcessInfo.processInfo.activeProcessorCount - 1)
            for _ in 0..<max(0, helpers) {
                DispatchQueue.global().async(group: group) { [self] in while work() {} }
            }
        }

        deinit { stop() }

        private func slice(_ index: Int) -> ArraySlice<T> {
            items[index * chunk..<min(items.count, (index + 1) * chunk)]
        }

        /// Claims the next unclaimed chunk and maps it; false when none is left.
        private func work() -> Bool {
            guard
                let index = board.withLock({ board -> Int? in
                    guard !board.stopped, board.unclaimed < chunks else { return nil }
                    board.unclaimed += 1
                    return board.unclaimed - 1
                })
            else { return false }
            let result = Result { try slice(index).map(transform) }
            board.withLock { $0.done[index] = result }
            finished.signal()
            return true
        }

        /// Hands every chunk's results to `consume`, in order; then stops.
        func consume(_ consume: (ArraySlice<T>, [R]) throws -> Void) throws {
            defer { stop() }
            for index in 0..<chunks {
                while true {
                    if let result = board.withLock({ $0.done.removeValue(forKey: index) }) {
                        try consume(slice(index), result.get())
                        break
                    }
                    if !work() { finished.wait() }
                }
            }
        }

        /// Stops the helpers after the chunks they hold; waits for them.
        func stop() {
            board.withLock { $0.stopped = true }
            group.wait()
        }
    }

    /// What the threads of a ``ChunkPipeline`` share.
    struct PipelineBoard<R: Sendable>: Sendable {
        /// The first chunk no thread has taken yet.
        var unclaimed = 0
        var done: [Int: Result<[R], any Error>] = [:]
        var stopped = false
    }

    /// Work started on another thread, whose result `wait()` returns.
    final class Pending<T: Sendable>: Sendable {
        private let group = DispatchGroup()
        private let result = Locked<Result<T, any Error>?>(nil)

        init(_ work: @escaping @Sendable () throws -> T) {
            group.enter()
            DispatchQueue.global().async { [result, group] in
                let outcome = Result { try work() }
                result.withLock { $0 = outcome }
                group.leave()
            }
        }

        func wait() throws -> T {
            group.wait()
            return try result.withLock { $0! }.get()
        }
    }
}
