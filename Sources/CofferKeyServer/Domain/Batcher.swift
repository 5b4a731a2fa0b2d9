#if Server
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
actor Batcher<Item: Sendable, Answer: Sendable> {
    typealias Run = @Sendable ([Item]) async throws -> [Result<Answer, any Error>]
    private let run: Run
    private var pending: [(Item, CheckedContinuation<Answer, any Error>)] = []
    private var running = false
    /// Batches run and the items they carried, so far (`/metrics`).
    private(set) var counts: (batches: Int, items: Int) = (0, 0)

    init(_ run: @escaping Run) { self.run = run }

    func submit(_ item: Item) async throws -> Answer {
        try await withCheckedThrowingContinuation { continuation in
            pending.append((item, continuation))
            if !running {
                running = true
                Task { await self.flush() }
            }
        }
    }

    private func flush() async {
        while !pending.isEmpty {
            let batch = pending.prefix(1000)
            pending.removeFirst(batch.count)
            counts = (counts.batches + 1, counts.items + batch.count)
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
        running = false
    }
}
#endif
