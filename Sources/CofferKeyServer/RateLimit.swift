import Coffer
import Foundation
import HTTPTypes
import Hummingbird
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
    /// Per client address (the connection's peer: behind a load balancer,
    /// the balancer's), counted before the token is checked, so that
    /// guessing tokens is limited too.
    public var address: RateLimit?

    public init(subject: RateLimit? = nil, address: RateLimit? = nil) {
        self.subject = subject
        self.address = address
    }

    public static let none = RateLimits()
}

extension ServerKeyStore {
    /// Counts one request against `bucket` under `limit`; throws `429
    /// rate-limited` with `Retry-After` (the seconds left in the window)
    /// when the window's count passes the limit.
    func admit(_ bucket: String, under limit: RateLimit) async throws {
        let now = self.now()
        let end = limit.windowEnd(now)
        let count = try await rows.countRequest(bucket: bucket, windowEnd: end)
        guard count > limit.requests else { return }
        var problem = Problem(
            .tooManyRequests, "rate-limited",
            "more than \(limit.requests) requests in \(limit.seconds) s; try again after the Retry-After seconds")
        problem.headers[.retryAfter] = String(max(1, end - now))
        throw problem
    }
}

/// The request context of the key server's router: Hummingbird's basic
/// context plus the connection's peer address, which the per-address rate
/// limit counts.
public struct KeyServerContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The address as the rate limit names it: the IP without the port.
    var clientAddress: String? { remoteAddress?.ipAddress ?? remoteAddress?.pathname }
}

/// Counts every request but the health, readiness and metrics checks against its
/// client address, before anything else is done for it.
struct AddressLimitMiddleware: RouterMiddleware {
    let server: KeyServer

    func handle(
        _ request: Request, context: KeyServerContext,
        next: (Request, KeyServerContext) async throws -> Response
    ) async throws -> Response {
        if let limit = server.limits.address, let address = context.clientAddress,
            !["/v1/health", "/v1/ready", "/metrics"].contains(request.uri.path)
        {
            try await server.store.admit("address:\(server.realm)/\(address)", under: limit)
        }
        return try await next(request, context)
    }
}
