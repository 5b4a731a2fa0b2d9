import Coffer
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP request as the key client sends it to its server.
public struct TransportRequest: Sendable {
    public var method: String
    public var url: URL
    /// Header fields in the order they are sent.
    public var headers: [(name: String, value: String)]
    public var body: Data?
    /// How long the whole exchange may take, connecting included.
    public var timeout: Duration
    /// The largest response body the client reads; a transport may stop
    /// reading past it and throw.
    public var maxResponseBytes: Int

    public init(
        method: String, url: URL, headers: [(name: String, value: String)], body: Data?, timeout: Duration,
        maxResponseBytes: Int
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }
}

/// A server's answer, whatever its status.
public struct TransportResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: Data

    public init(status: Int, headers: [(name: String, value: String)], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first field named `name`, compared without regard to case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Why a transport got no answer, in words a person can act on (never a
/// token or a URL's query); ``KeyClientError/Code/unreachable`` says it.
public struct TransportFailure: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// The server answered, with a body over the request's limit: the
    /// client reports a malformed answer rather than an unreachable server.
    public let answerTooLarge: Bool

    public init(_ description: String, answerTooLarge: Bool = false) {
        self.description = description
        self.answerTooLarge = answerTooLarge
    }

    /// An answer whose body passed `limit` bytes.
    public static func tooLarge(_ limit: Int) -> TransportFailure {
        TransportFailure("the answer is over \(limit) bytes", answerTooLarge: true)
    }
}

/// How a ``KeyServerClient`` or ``KeyServerAdmin`` reaches its server:
/// ``URLSessionTransport`` by default, so that an app gets the system's
/// proxy, VPN, App Transport Security and its own session delegate (for
/// certificate pinning); a server can plug in AsyncHTTPClient instead
/// (`AsyncHTTPClientTransport`, in CofferKeyClientNIO).
///
/// A transport returns any answer the server gave, whatever its status,
/// and throws when there was none: the server could not be reached (say
/// so as soon as the connection is refused, not at the timeout), TLS
/// failed, the timeout passed, or the body was larger than allowed.
public protocol KeyServerTransport: Sendable {
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// A transport that runs each request as a `URLSession` data task
/// (FoundationNetworking on Linux).
///
/// The requests run in a session of the transport's own, made with the
/// given session's configuration (its proxy, TLS settings, cookies off or
/// on) and passing authentication challenges — a pinning check — to the
/// given session's delegate. Its own delegate holds two rules no session
/// can lose (H4 and H7 of the fourth security review): **no redirect is
/// followed** — a key server never sends one, and a request's token and
/// DPoP proof are for its own URL, so the 3xx comes back as the answer and
/// the client reports it — and **an answer stops at the request's limit
/// while it streams**: past `maxResponseBytes` the task is cancelled, so an
/// endless answer costs at most the limit in memory.
///
/// ```swift
/// // Pinning on Apple platforms: a session whose delegate checks the server's trust.
/// let session = URLSession(configuration: .ephemeral, delegate: PinningDelegate(), delegateQueue: nil)
/// let client = try KeyServerClient(
///     server: url, account: user.id, token: { try await auth.idToken() },
///     transport: URLSessionTransport(session: session))
/// ```
public struct URLSessionTransport: KeyServerTransport, @unchecked Sendable {
    // URLSession is thread-safe (Apple's documentation); it is not marked Sendable everywhere.
    /// The session whose configuration and delegate the requests use.
    public let session: URLSession
    private let guarded: GuardedSession

    /// `session`: `URLSession.shared` by default; give one of your own
    /// for a delegate (its authentication challenges), a proxy or an
    /// ephemeral cache.
    public init(session: URLSession = .shared) {
        self.session = session
        guarded = GuardedSession(like: session)
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.addValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = request.body
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        let seconds = Double(request.timeout.components.seconds) + Double(request.timeout.components.attoseconds) / 1e18
        urlRequest.timeoutInterval = max(0.001, seconds)
        let (guarded, prepared, limit) = (self.guarded, urlRequest, request.maxResponseBytes)
        let (data, response) = try await Self.within(request.timeout) {
            try await guarded.data(for: prepared, limit: limit)
        }
        guard let http = response as? HTTPURLResponse else { throw TransportFailure("the answer is not HTTP") }
        let headers = http.allHeaderFields.compactMap { name, value -> (name: String, value: String)? in
            guard let name = name as? String, let value = value as? String else { return nil }
            return (name, value)
        }
        return TransportResponse(status: http.statusCode, headers: headers, body: data)
    }

    /// `body`'s result, or a timeout once `limit` has passed: a URLSession
    /// timeout is the longest silence, not the whole exchange.
    ///
    /// The answer comes at the limit even when `body` does not end on
    /// cancellation. FoundationNetworking's URLSession does not always end
    /// a data task that is cancelled (swift-corelibs-foundation #3497,
    /// #3876); a task group would wait for it, so the limit would not hold.
    /// Here `body` runs as a task of its own: at the limit, or when the
    /// caller is cancelled, it is cancelled and left to end by itself, and
    /// its result, if it ever comes, is dropped.
    static func within<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws
        -> T
    {
        let race = FirstResult<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation, limit: limit, body)
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }

    /// A reason for people: URLSession's error codes, never a URL's query.
    static func reason(_ error: any Error) -> String {
        if let failure = error as? TransportFailure { return failure.description }
        guard let error = error as? URLError else { return "\(type(of: error))" }
        switch error.code {
        case .cannotConnectToHost: return "the connection was refused"
        case .cannotFindHost, .dnsLookupFailed: return "the host name was not found"
        case .timedOut: return "no answer in time"
        case .notConnectedToInternet, .networkConnectionLost: return "the network is down or was lost"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
            .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected:
            return "TLS failed: the server's certificate was refused"
        case .cancelled: return "the request was cancelled"
        default: return "URLError \(error.code.rawValue)"
        }
    }
}

// A request carries the sign-in token (and a DPoP proof) in its headers, a
// response a key in its body: neither is ever printed, dumped or mirrored.
extension TransportRequest: SecretRedacting {
    public var description: String { "TransportRequest(\(method) \(url.path), <redacted>)" }
}

extension TransportResponse: SecretRedacting {
    public var description: String { "TransportResponse(\(status), <redacted>)" }
}

/// The first of a body's result, a time limit and the caller's
/// cancellation, given once to a continuation (`URLSessionTransport.within`).
/// A result is not kept once given: it may hold a key.
private final class FirstResult<T: Sendable>: Sendable {
    private struct State: Sendable {
        var continuation: CheckedContinuation<T, any Error>?
        var finished = false
        /// The caller's cancellation when it came before `start`.
        var early: Result<T, any Error>?
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Locked(State())

    func start(
        _ continuation: CheckedContinuation<T, any Error>, limit: Duration,
        _ body: @escaping @Sendable () async throws -> T
    ) {
        if let early = state.withLock({ state -> Result<T, any Error>? in
            if !state.finished { state.continuation = continuation }
            defer { state.early = nil }
            return state.early
        }) {
            continuation.resume(with: early)
            return
        }
        let work = Task {
            do { self.finish(.success(try await body())) } catch { self.finish(.failure(error)) }
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            self.finish(.failure(TransportFailure("no answer within \(limit)")))
        }
        let finished = state.withLock { state in
            if !state.finished { state.tasks = [work, timer] }
            return state.finished
        }
        if finished {
            work.cancel()
            timer.cancel()
        }
    }

    /// Gives `result` to the caller unless something came first, and
    /// cancels whatever is still running.
    func finish(_ result: Result<T, any Error>) {
        let taken = state.withLock { state -> (CheckedContinuation<T, any Error>?, [Task<Void, Never>])? in
            guard !state.finished else { return nil }
            defer { state = State(finished: true, early: state.continuation == nil ? result : nil) }
            return (state.continuation, state.tasks)
        }
        guard let (continuation, tasks) = taken else { return }
        for task in tasks { task.cancel() }
        continuation?.resume(with: result)
    }
}
