#if Server
import Coffer
import Foundation

/// At most `requests` requests per `seconds`, counted in fixed windows of
/// `seconds` that every replica shares through the database: the counter
/// for a window is one row, raised by one statement per request (an
/// upsert), so two replicas never both grant the last request of a window.
///
/// ```swift
/// let server = try KeyServer(
///     store: store, verifier: verifier,
///     limits: .init(subject: try RateLimit("60/60"), address: try RateLimit("600/60")))
/// ```
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    public let requests: Int
    public let seconds: Int

    public init(requests: Int, seconds: Int) throws {
        guard (1...1_000_000).contains(requests), (1...86_400).contains(seconds) else {
            throw CofferError(
                .invalidArgument,
                "a rate limit is 1 to 1000000 requests per 1 to 86400 seconds, as N/SECONDS")
        }
        self.requests = requests
        self.seconds = seconds
    }

    /// `N/SECONDS`, as `--rate-limit` takes it: `60/60` is sixty a minute.
    public init(_ text: String) throws {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let requests = Int(parts[0]), let seconds = Int(parts[1]) else {
            throw CofferError(
                .invalidArgument, "a rate limit is written N/SECONDS (60/60 is sixty a minute), not \(text)")
        }
        try self.init(requests: requests, seconds: seconds)
    }

    public var description: String { "\(requests)/\(seconds)" }

    /// The window `now` falls in, named by the second it ends.
    package func windowEnd(_ now: Int64) -> Int64 { (now / Int64(seconds) + 1) * Int64(seconds) }
}

/// The rate limits' counts: each replica's in memory (``LocalRateCounts``)
/// and those every replica shares in the database, where counts asked for
/// together are raised in one transaction (a batch, as releases are).
package final class RateLimiter: Sendable {
    /// The first tier, in this replica's memory.
    package let local = LocalRateCounts()
    /// The shared counts' batches.
    package let shared: Batcher<RateCount, Int>
    /// Counts raised inside key releases' transactions.
    let carried = Locked(0)
    let now: @Sendable () -> Int64

    init(rows: any KeyRows, now: @escaping @Sendable () -> Int64) {
        shared = Batcher { counts in try await rows.countRequests(counts).map { .success($0) } }
        self.now = now
    }

    /// Counts raised so far: transactions of their own and requests
    /// counted (those inside key releases included, which add none).
    package var counted: (transactions: Int, counts: Int) {
        let own = shared.counts
        return (own.batches, own.items + carried.withLock { $0 })
    }

    /// Raises one shared count before the request goes on (`429` when it passes its limit).
    package func admit(_ limited: LimitedCount) async throws {
        try await admit(limited.count.bucket, under: limited.limit)
    }

    /// Releases a key with the request's shared counts: checked first
    /// against windows this replica knows are full; then raised in the
    /// release's own transaction (one commit for the request). A count
    /// that passes its limit refuses the request, `429`.
    func release(_ request: ReleaseRequest, _ releases: Batcher<ReleaseRequest, StoredVersion?>) async throws
        -> StoredVersion?
    {
        let now = self.now()
        for limited in request.counts {
            try local.check(limited.count.bucket, under: limited.limit, now: now, counting: false)
        }
        carried.withLock { $0 += request.counts.count }
        do {
            return try await releases.submit(request)
        } catch let full as SharedCountFull {
            local.refuse(full.count.count.bucket, until: full.count.count.windowEnd)
            throw LocalRateCounts.tooMany(full.count.limit, end: full.count.count.windowEnd, now: now)
        }
    }

    /// Counts one request against `bucket` under `limit` in the count
    /// every replica shares; throws `429 rate-limited` with `Retry-After`
    /// (the seconds left in the window) when the window's count passes the
    /// limit, and remembers that in this replica's memory for the rest of
    /// the window, so later requests cost no write.
    package func admit(_ bucket: String, under limit: RateLimit) async throws {
        let now = self.now()
        let end = limit.windowEnd(now)
        try local.check(bucket, under: limit, now: now, counting: false)
        let count = try await shared.submit(RateCount(bucket: bucket, windowEnd: end))
        guard count > limit.requests else { return }
        local.refuse(bucket, until: end)
        throw LocalRateCounts.tooMany(limit, end: end, now: now)
    }
}

/// The first tier of the rate limits, in each replica's memory (security
/// review 3, G7): every request an address sends is counted here, before
/// its token is looked at, and one past the limit is refused with no
/// database write; the shared count in the database is raised only for
/// requests whose token or operator token was accepted. A window the
/// shared count found full is refused here until it ends. A replica's
/// count is at most the shared one, so this never refuses what the shared
/// count would admit.
package final class LocalRateCounts: Sendable {
    struct Window {
        var end: Int64
        var count: Int
        var full: Bool
    }

    private let windows = Locked([String: Window]())
    /// Past this many buckets, windows that ended are forgotten (and, if
    /// an address flood from everywhere keeps them all current, all of
    /// them: the shared count still holds).
    static let most = 200_000

    /// Counts a request (when `counting`) and throws `429` once the
    /// window's local count passes the limit or the shared count was full.
    package func check(_ bucket: String, under limit: RateLimit, now: Int64, counting: Bool) throws {
        let end = limit.windowEnd(now)
        let refused = windows.withLock { windows -> Bool in
            if windows.count >= Self.most && windows[bucket] == nil {
                windows = windows.filter { $0.value.end > now }
                if windows.count >= Self.most { windows.removeAll(keepingCapacity: true) }
            }
            var window = windows[bucket].flatMap { $0.end == end ? $0 : nil } ?? Window(end: end, count: 0, full: false)
            if counting { window.count += 1 }
            windows[bucket] = window
            return window.full || window.count > limit.requests
        }
        if refused { throw Self.tooMany(limit, end: end, now: now) }
    }

    package func refuse(_ bucket: String, until end: Int64) {
        windows.withLock { windows in
            if windows[bucket]?.end == end {
                windows[bucket]?.full = true
            } else {
                windows[bucket] = Window(end: end, count: 0, full: true)
            }
        }
    }

    package static func tooMany(_ limit: RateLimit, end: Int64, now: Int64) -> KeyServerError {
        KeyServerError(
            .rateLimited,
            "more than \(limit.requests) requests in \(limit.seconds) s; try again after the Retry-After seconds",
            retryAfter: max(1, end - now))
    }
}
#endif
