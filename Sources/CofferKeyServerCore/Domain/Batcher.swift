#if Server
import Coffer
import Foundation
import Tracing

/// One key release asked for: `version` nil for the latest; `proof` the
/// request's DPoP proof, refused if seen before.
package struct ReleaseRequest: Sendable {
    let name: KeyName
    let version: Int?
    let proof: ProofUse?
    /// The request's shared rate counts, raised in the release's own
    /// transaction (``CountPlan``).
    var counts: [LimitedCount] = []
    /// Who the key is released to when not its subject: an operator of
    /// scope `keys:release` (`operator:NAME`), as the audit names it.
    var releasedTo: String? = nil

    var actor: String { releasedTo ?? "subject:" + name.subject }
}

/// One request counted against a rate limit's bucket, in the window ending at `windowEnd`.
package struct RateCount: Sendable, Hashable {
    let bucket: String
    let windowEnd: Int64
}

/// A shared count and the limit it is checked against.
package struct LimitedCount: Sendable {
    let count: RateCount
    let limit: RateLimit

    package init(_ bucket: String, under limit: RateLimit, now: Int64) {
        count = RateCount(bucket: bucket, windowEnd: limit.windowEnd(now))
        self.limit = limit
    }

    /// The count `raised` passed the limit: the request is refused.
    func refusal(_ raised: Int) -> SharedCountFull? {
        raised > limit.requests ? SharedCountFull(count: self) : nil
    }
}

/// A request a shared count refused (its window is full): the store
/// remembers the window in memory and answers `429 rate-limited`.
struct SharedCountFull: Error {
    let count: LimitedCount
}

/// When one batch ran (from its taking to its answers) and how many
/// requests it carried: each request's `database commit` span.
struct BatchRun: Sendable {
    let start: DefaultTracerClock.Instant
    let end: DefaultTracerClock.Instant
    let items: Int
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
/// and no wake-up of another thread; only the batch's runner does, and
/// only when the runner is parked waiting for it (``Loop``).
/// (`@unchecked`: `state` is used only under `condition`.)
package final class Batcher<Item: Sendable, Answer: Sendable>: @unchecked Sendable {
    typealias Run = @Sendable ([Item]) async throws -> [Result<Answer, any Error>]
    /// Runs batches for as long as it chooses: each from `next` (nil when
    /// none waits, and then it must stop), each answered through `answer`
    /// before the next is taken. It throws when a batch fails; that batch,
    /// taken but not answered, gets the error. `next(wait)` with an empty
    /// queue parks the runner's thread up to `wait` for a request before it
    /// gives nil: a runner that holds something costly to take again (GRDB's
    /// writer) keeps it across the moment between one batch's answers and
    /// the requests they bring.
    typealias Loop =
        @Sendable (
            _ next: @escaping @Sendable (_ wait: Duration) -> [Item]?,
            _ answer: @escaping @Sendable ([Result<Answer, any Error>]) -> Void
        ) async throws -> Void
    typealias Waiter = CheckedContinuation<(Answer, BatchRun), any Error>
    private struct State: Sendable {
        var pending: [(Item, Waiter)] = []
        /// A runner is draining `pending`; the next request must not start another.
        var running = false
        /// The runner waits in `next` for a request to arrive.
        var parked = false
        var counts: (batches: Int, items: Int) = (0, 0)
    }
    private let loop: Loop
    /// A pthread mutex and condition (which ThreadSanitizer sees, as
    /// ``Locked`` explains), for the parked runner to wait on.
    private let condition = NSCondition()
    private var state = State()

    private func withState<R>(_ body: (inout State) throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.unlock() }
        return try body(&state)
    }

    /// Batches run and the items they carried, so far (`/metrics`).
    package var counts: (batches: Int, items: Int) { withState { $0.counts } }

    /// Requests waiting for a batch (tests).
    var pendingCount: Int { withState { $0.pending.count } }

    /// A runner is draining the queue or parked waiting for it (tests).
    var isRunning: Bool { withState { $0.running } }

    /// One batch per turn of the runner.
    convenience init(_ run: @escaping Run) {
        self.init(loop: { next, answer in
            guard let batch = next(.zero) else { return }
            answer(try await run(batch))
        })
    }

    /// Batches run by `loop`, which may run several in one turn (SQLite's
    /// writer: ``SQLiteKeyRows/releaseBatches(next:answer:now:)``).
    init(loop: @escaping Loop) { self.loop = loop }

    /// `item`'s answer, once a batch that carried it has run. The wait is
    /// the span `release batch` (``ServerSpan``) and the batch's run — its
    /// transaction, ending with its commit — the span `database commit`
    /// inside it, with the number of requests the batch carried.
    func submit(_ item: Item) async throws -> Answer {
        try await ServerSpan.run("release batch") { _ in
            let (answer, run) = try await enqueue(item)
            ServerSpan.record(
                "database commit", from: run.start, to: run.end,
                attributes: ["coffer.batch.items": .int64(Int64(run.items))])
            return answer
        }
    }

    private func enqueue(_ item: Item) async throws -> (Answer, BatchRun) {
        try await withCheckedThrowingContinuation { continuation in
            let start = withState { state -> Bool in
                state.pending.append((item, continuation))
                if state.parked { condition.signal() }
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
        let taken = Locked<(waiting: [Waiter], idle: Bool, start: DefaultTracerClock.Instant)>(
            ([], false, DefaultTracerClock.now))
        let next: @Sendable (Duration) -> [Item]? = { wait in
            guard let batch = self.nextBatch(wait: wait) else {
                taken.withLock { $0.idle = true }
                return nil
            }
            let start = DefaultTracerClock.now
            taken.withLock {
                $0.waiting = batch.map(\.1)
                $0.start = start
            }
            return batch.map(\.0)
        }
        let answer: @Sendable ([Result<Answer, any Error>]) -> Void = { answers in
            let (waiting, start) = taken.withLock { taken in
                defer { taken.waiting = [] }
                return (taken.waiting, taken.start)
            }
            let run = BatchRun(start: start, end: DefaultTracerClock.now, items: waiting.count)
            // One answer per request, or none waits for ever.
            guard answers.count == waiting.count else {
                let error = KeyServerError(.databaseError, "a batch was answered in part")
                for waiter in waiting { waiter.resume(throwing: error) }
                return
            }
            for (waiter, answer) in zip(waiting, answers) { waiter.resume(with: answer.map { ($0, run) }) }
        }
        while true {
            do {
                try await loop(next, answer)
            } catch {
                var (waiting, idle) = taken.withLock { taken in
                    defer { taken.waiting = [] }
                    return (taken.waiting, taken.idle)
                }
                // A loop that fails before it takes a batch fails the next
                // one, so that no request waits on a writer that keeps failing.
                if waiting.isEmpty && !idle {
                    guard let batch = nextBatch(wait: .zero) else { return }
                    waiting = batch.map(\.1)
                }
                for waiter in waiting { waiter.resume(throwing: error) }
                if idle { return }
            }
            if taken.withLock({ $0.idle }) { return }
        }
    }

    private func nextBatch(wait: Duration) -> [(Item, Waiter)]? {
        condition.lock()
        defer { condition.unlock() }
        // No access to `state` spans the wait, in which a submit changes it.
        if state.pending.isEmpty && wait > .zero {
            let (seconds, attoseconds) = wait.components
            let deadline = Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) * 1e-18)
            state.parked = true
            // A submit signals under the lock; a timeout ends the wait.
            while state.pending.isEmpty && condition.wait(until: deadline) {}
            state.parked = false
        }
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
#endif
