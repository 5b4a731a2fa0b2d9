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
    private struct State: Sendable {
        var pending: [(Item, CheckedContinuation<Answer, any Error>)] = []
        /// A runner is draining `pending`; the next request must not start another.
        var running = false
        var counts: (batches: Int, items: Int) = (0, 0)
    }
    private let run: Run
    private let state = Locked(State())

    /// Batches run and the items they carried, so far (`/metrics`).
    var counts: (batches: Int, items: Int) { state.withLock { $0.counts } }

    init(_ run: @escaping Run) { self.run = run }

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

    /// Runs batches until none waits; the check for an empty queue and the
    /// end of `running` are one step under the lock, so a request that
    /// joins as the runner stops starts the next runner.
    private func drain() async {
        while let batch = nextBatch() {
            do {
                let answers = try await run(batch.map(\.0))
                // One answer per request, or none waits for ever.
                guard answers.count == batch.count else {
                    throw KeyServerError(.failed, "database-error", "a batch was answered in part")
                }
                for ((_, continuation), answer) in zip(batch, answers) { continuation.resume(with: answer) }
            } catch {
                for (_, continuation) in batch { continuation.resume(throwing: error) }
            }
        }
    }

    private func nextBatch() -> [(Item, CheckedContinuation<Answer, any Error>)]? {
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
