#if Server
import Coffer
import Foundation

/// One key release asked for: `version` nil for the latest; `proof` the
/// request's DPoP proof, refused if seen before.
struct ReleaseRequest: Sendable {
    let name: KeyName
    let version: Int?
    let proof: ProofUse?

    var actor: String { "subject:" + name.subject }
}

/// Requests that share one transaction: each waits for the transaction
/// that holds its answer, and requests arriving while one runs share the
/// next. Key releases run so (``KeyRows/release(_:now:)``: a release waits
/// for the transaction that holds its audit entry, so no key leaves
/// unaudited, and no DPoP proof is used twice). On PostgreSQL a batch
/// costs one statement and one hold of the audit lock, instead of
/// several each; on SQLite one write transaction instead of one each.
///
/// Not an actor: a request joins the queue under a lock on its own thread
/// (the connection's event loop), so it costs no hop to another executor
/// and no wake-up of another thread; only the batch's runner does.
final class Batcher<Item: Sendable, Answer: Sendable>: Sendable {
    typealias Run = @Sendable ([Item]) async throws -> [Result<Answer, any Error>]
    /// Runs batches for as long as it chooses: each from `next` (nil when
    /// none waits, and then it must stop), each answered through `answer`
    /// before the next is taken. It throws when a batch fails; that batch,
    /// taken but not answered, gets the error.
    typealias Loop =
        @Sendable (
            _ next: @escaping @Sendable () -> [Item]?,
            _ answer: @escaping @Sendable ([Result<Answer, any Error>]) -> Void
        ) async throws -> Void
    typealias Waiter = CheckedContinuation<Answer, any Error>
    private struct State: Sendable {
        var pending: [(Item, Waiter)] = []
        /// A runner is draining `pending`; the next request must not start another.
        var running = false
        var counts: (batches: Int, items: Int) = (0, 0)
    }
    private let loop: Loop
    private let state = Locked(State())

    /// Batches run and the items they carried, so far (`/metrics`).
    var counts: (batches: Int, items: Int) { state.withLock { $0.counts } }

    /// Requests waiting for a batch (tests).
    var pendingCount: Int { state.withLock { $0.pending.count } }

    /// One batch per turn of the runner.
    convenience init(_ run: @escaping Run) {
        self.init(loop: { next, answer in
            guard let batch = next() else { return }
            answer(try await run(batch))
        })
    }

    /// Batches run by `loop`, which may run several in one turn (SQLite's
    /// writer: ``SQLiteKeyRows/releaseBatches(next:answer:now:)``).
    init(loop: @escaping Loop) { self.loop = loop }

    func submit(_ item: Item) async throws -> Answer {
        try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { state -> Bool in
                state.pending.append((item, continuation))
                guard !state.running else { return false }
                state.running = true
                return true
            }
            if start { Task { await self.drain() } }
        }
    }

    /// Turns the loop until the queue is empty; the check for an empty
    /// queue and the end of `running` are one step under the lock, so a
    /// request that joins as the runner stops starts the next runner.
    private func drain() async {
        let taken = Locked<(waiting: [Waiter], idle: Bool)>(([], false))
        let next: @Sendable () -> [Item]? = {
            guard let batch = self.nextBatch() else {
                taken.withLock { $0.idle = true }
                return nil
            }
            taken.withLock { $0.waiting = batch.map(\.1) }
            return batch.map(\.0)
        }
        let answer: @Sendable ([Result<Answer, any Error>]) -> Void = { answers in
            let waiting = taken.withLock { taken in
                defer { taken.waiting = [] }
                return taken.waiting
            }
            // One answer per request, or none waits for ever.
            guard answers.count == waiting.count else {
                let error = KeyServerError(.failed, "database-error", "a batch was answered in part")
                for waiter in waiting { waiter.resume(throwing: error) }
                return
            }
            for (waiter, answer) in zip(waiting, answers) { waiter.resume(with: answer) }
        }
        while true {
            do {
                try await loop(next, answer)
            } catch {
                var (waiting, idle) = taken.withLock { taken in
                    defer { taken.waiting = [] }
                    return taken
                }
                // A loop that fails before it takes a batch fails the next
                // one, so that no request waits on a writer that keeps failing.
                if waiting.isEmpty && !idle {
                    guard let batch = nextBatch() else { return }
                    waiting = batch.map(\.1)
                }
                for waiter in waiting { waiter.resume(throwing: error) }
                if idle { return }
            }
            if taken.withLock({ $0.idle }) { return }
        }
    }

    private func nextBatch() -> [(Item, Waiter)]? {
        state.withLock { state in
            guard !state.pending.isEmpty else {
                state.running = false
                return nil
            }
            let batch = Array(state.pending.prefix(1000))
            state.pending.removeFirst(batch.count)
            state.counts = (state.counts.batches + 1, state.counts.items + batch.count)
            return batch
        }
    }
}
#endif
