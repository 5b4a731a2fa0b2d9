#if Server
import Coffer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import NIOCore

/// The limits one server applies; either may be absent (no limit).
public struct RateLimits: Sendable, Hashable {
    /// Per signed-in subject of the server's realm, whatever address they come from.
    public var subject: RateLimit?
    /// Per client address (the connection's peer, or, when the peer is one
    /// of ``trustedProxies``, the client it names in `X-Forwarded-For` or
    /// `Forwarded`), counted before the token is checked, so that guessing
    /// tokens is limited too.
    public var address: RateLimit?
    /// The load balancers whose word about the client is taken; their
    /// connections are also exempt from the per-address connection cap
    /// (``ClientLimits``).
    public var trustedProxies = TrustedProxies()
    /// How long a refused request waits before its answer: a token that
    /// is not accepted (401) or an address past its limit (429). A client
    /// flooding junk then holds its connections idle instead of the
    /// server's cores (security review 3, G7); `coffer-server` waits
    /// 100 ms, the library by default not at all.
    public var refusalDelay: Duration

    public init(subject: RateLimit? = nil, address: RateLimit? = nil, refusalDelay: Duration = .zero) {
        self.subject = subject
        self.address = address
        self.refusalDelay = refusalDelay
    }

    /// `body`, its 401 and 429 refusals answered after ``refusalDelay``.
    func delayingRefusals<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let error as KeyServerError where error.isRefusal {
            if refusalDelay > .zero { try? await Task.sleep(for: refusalDelay) }
            throw error
        } catch let problem as Problem where problem.status == .unauthorized {
            if refusalDelay > .zero { try? await Task.sleep(for: refusalDelay) }
            throw problem
        }
    }

    public static let none = RateLimits()
}

/// The rate limits at work: the limits, the store that keeps the counts
/// (each replica's in memory, and those every replica shares) and the
/// realm that names the buckets. Both middlewares below hold one.
struct RateLimiting: Sendable {
    let limits: RateLimits
    let store: ServerKeyStore
    let realm: String

    func addressBucket(_ address: String) -> String { "address:\(realm)/\(address)" }
    func subjectBucket(_ subject: String) -> String { "subject:\(realm)/\(subject)" }
}

/// Counts every request but the health, readiness and metrics checks
/// against its client address in this replica's memory, before anything
/// else is done for it (the shared count follows once the request is
/// authenticated: ``SharedRateLimitMiddleware``). It also takes the client
/// a trusted proxy names (``TrustedProxies``).
struct AddressLimitMiddleware: RouterMiddleware {
    let limiting: RateLimiting

    func handle(
        _ request: Request, context: KeyServerContext,
        next: (Request, KeyServerContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        let proxies = limiting.limits.trustedProxies
        if proxies.contains(context.remoteAddress),
            let client = proxies.forwardedClient(
                xForwardedFor: request.headers[HTTPField.Name("X-Forwarded-For")!],
                forwarded: request.headers[HTTPField.Name("Forwarded")!])
        {
            context.forwardedClient = KeyServerContext.limitedAddress(client)
        }
        if let limit = limiting.limits.address, let address = context.clientAddress,
            !["/v1/health", "/v1/ready", "/metrics"].contains(request.uri.path)
        {
            let store = limiting.store
            try store.limiter.local.check(
                limiting.addressBucket(address), under: limit, now: store.now(), counting: true)
        }
        return try await next(request, context)
    }
}

/// The shared rate limits, after a route group's authenticator: a request
/// whose token (and proof) or operator token was accepted is counted
/// against its client address and, for a signed-in user, its subject, in
/// the counts every replica shares. A request refused earlier costs no
/// write. On the key routes (`releasing`) the counts are handed to the
/// route (``PendingCounts``), which raises them in the release's own
/// transaction; those a route did not use (it failed first) are raised
/// after it.
struct SharedRateLimitMiddleware: RouterMiddleware {
    let limiting: RateLimiting
    var releasing = false

    func handle(
        _ request: Request, context: KeyServerContext, next: (Request, KeyServerContext) async throws -> Response
    )
        async throws -> Response
    {
        let (limits, store, now) = (limiting.limits, limiting.store, limiting.store.now())
        var counts: [LimitedCount] = []
        if let limit = limits.address, let address = context.clientAddress {
            counts.append(LimitedCount(limiting.addressBucket(address), under: limit, now: now))
        }
        if let limit = limits.subject, let subject = context.identity?.subject {
            counts.append(LimitedCount(limiting.subjectBucket(subject), under: limit, now: now))
        }
        guard releasing, !counts.isEmpty else {
            for count in counts { try await store.limiter.admit(count) }
            return try await next(request, context)
        }
        let pending = PendingCounts(counts)
        var context = context
        context.pendingCounts = pending
        let result: Result<Response, any Error>
        do { result = .success(try await next(request, context)) } catch { result = .failure(error) }
        // What the route did not raise with a release (it failed first).
        for count in pending.take() { _ = try? await store.limiter.admit(count) }
        return try result.get()
    }
}

/// A key request's shared counts, for the route to raise with its
/// release; taken once.
final class PendingCounts: Sendable {
    private let counts: Locked<[LimitedCount]>

    init(_ counts: [LimitedCount]) { self.counts = Locked(counts) }

    func take() -> [LimitedCount] {
        counts.withLock { counts in
            defer { counts = [] }
            return counts
        }
    }
}

/// Answers every refusal — a token or DPoP proof not accepted, a rate
/// limit passed — after ``RateLimits/refusalDelay``, wherever below it was
/// made (the address limit, an authenticator, a route): a timer, not work,
/// so a client sending junk holds its own connections and no one else's.
struct RefusalDelayMiddleware<Context: RequestContext>: RouterMiddleware {
    let limits: RateLimits

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        try await limits.delayingRefusals { try await next(request, context) }
    }
}
#endif
