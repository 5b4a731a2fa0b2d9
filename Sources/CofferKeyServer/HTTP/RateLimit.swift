#if Server
import Coffer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import NIOCore

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
    func windowEnd(_ now: Int64) -> Int64 { (now / Int64(seconds) + 1) * Int64(seconds) }
}

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

extension ServerKeyStore {
    /// Counts one request against `bucket` under `limit` in the count
    /// every replica shares (counts that arrive together share one
    /// transaction, ``rateCounts``); throws `429 rate-limited` with `Retry-After`
    /// (the seconds left in the window) when the window's count passes the
    /// limit, and remembers that in this replica's memory for the rest of
    /// the window (``LocalRateCounts``), so later requests cost no write.
    func admit(_ bucket: String, under limit: RateLimit) async throws {
        let now = self.now()
        let end = limit.windowEnd(now)
        try localCounts.check(bucket, under: limit, now: now, counting: false)
        let count = try await rateCounts.submit(RateCount(bucket: bucket, windowEnd: end))
        guard count > limit.requests else { return }
        localCounts.refuse(bucket, until: end)
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
final class LocalRateCounts: Sendable {
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
    func check(_ bucket: String, under limit: RateLimit, now: Int64, counting: Bool) throws {
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

    func refuse(_ bucket: String, until end: Int64) {
        windows.withLock { windows in
            if windows[bucket]?.end == end {
                windows[bucket]?.full = true
            } else {
                windows[bucket] = Window(end: end, count: 0, full: true)
            }
        }
    }

    static func tooMany(_ limit: RateLimit, end: Int64, now: Int64) -> KeyServerError {
        KeyServerError(
            .rateLimited,
            "more than \(limit.requests) requests in \(limit.seconds) s; try again after the Retry-After seconds",
            retryAfter: max(1, end - now))
    }
}

/// The request context of the key server's router: Hummingbird's basic
/// context, the connection's peer address (which the per-address rate
/// limit counts), and the authenticated caller.
public struct KeyServerContext: AuthRequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The caller, once the route group's authenticator accepted them
    /// (``KeyServerIdentity``).
    public var identity: KeyServerIdentity?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        identity = nil
        forwardedClient = nil
    }

    /// The client a trusted proxy named (``TrustedProxies``), as the limits name it.
    var forwardedClient: String?

    /// The address as the rate limit names it: the IP without the port.
    var clientAddress: String? { forwardedClient ?? remoteAddress.flatMap(Self.limitedAddress) }

    /// The client an address stands for, as the per-address limits count
    /// it (security review 3, G14): an IPv4 address (also one mapped into
    /// IPv6) whole, an IPv6 address by its /64 (a host is given a /64 and
    /// chooses its own 64 low bits, so counting whole addresses would give
    /// it 2^64 buckets), a Unix socket by its path.
    static func limitedAddress(_ address: SocketAddress) -> String? {
        switch address {
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
                return bytes[12...].map(String.init).joined(separator: ".")
            }
            let groups = stride(from: 0, to: 8, by: 2).map {
                String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
            }
            return groups.joined(separator: ":") + "::/64"
        case .v4, .unixDomainSocket:
            return address.ipAddress ?? address.pathname
        }
    }
}

/// Counts every request but the health, readiness and metrics checks
/// against its client address in this replica's memory, before anything
/// else is done for it (the shared count follows once its token is
/// accepted: ``KeyServer/admitAddress(_:)``).
struct AddressLimitMiddleware: RouterMiddleware {
    let server: KeyServer

    func handle(
        _ request: Request, context: KeyServerContext,
        next: (Request, KeyServerContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        let proxies = server.limits.trustedProxies
        if proxies.contains(context.remoteAddress),
            let client = proxies.forwardedClient(
                xForwardedFor: request.headers[HTTPField.Name("X-Forwarded-For")!],
                forwarded: request.headers[HTTPField.Name("Forwarded")!])
        {
            context.forwardedClient = KeyServerContext.limitedAddress(client)
        }
        if let limit = server.limits.address, let address = context.clientAddress,
            !["/v1/health", "/v1/ready", "/metrics"].contains(request.uri.path)
        {
            try server.store.localCounts.check(
                server.addressBucket(address), under: limit, now: server.store.now(), counting: true)
        }
        return try await next(request, context)
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

extension KeyServer {
    func addressBucket(_ address: String) -> String { "address:\(realm)/\(address)" }

    /// The shared per-address count, for a request whose token was accepted.
    func admitAddress(_ context: KeyServerContext) async throws {
        guard let limit = limits.address, let address = context.clientAddress else { return }
        try await store.admit(addressBucket(address), under: limit)
    }
}
#endif
