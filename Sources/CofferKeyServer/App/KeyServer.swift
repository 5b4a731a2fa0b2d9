#if Server
import Coffer
import Foundation
import HTTPTypes
import Hummingbird

/// The key server's HTTP API (docs/openapi.yaml): routes on a Hummingbird
/// router, over a key store and a sign-in verifier. The executable
/// `coffer-server` only reads its configuration and runs this.
public struct KeyServer: Sendable {
    public let store: ServerKeyStore
    public let verifier: SignInVerifier
    /// The realm every key this server releases belongs to.
    public let realm: String
    /// When set, `POST /v1/dev/token` mints sign-in tokens (development only).
    public let devIssuer: DevIssuer?
    /// Requests allowed per subject and per client address (none by default).
    public let limits: RateLimits
    /// What `GET /metrics` serves.
    public let metrics: KeyServerMetrics
    /// Device-bound requests (RFC 9449): off unless required, but a proof
    /// sent is always checked.
    public let dpop: DPoPPolicy
    /// How long a client may keep a key it was given without asking again
    /// (each key's `cacheSeconds`): the longest a client's cached key can
    /// outlive a shred, a retirement or a rotation.
    public let clientCacheSeconds: Int64
    /// DPoP proof headers seen before (their keys and thumbprints).
    let proofHeaders = DPoPHeaders()
    public static let maxBodyBytes = 16 * 1024
    public static let maxBatch = 32
    public static let maxClientCacheSeconds: Int64 = 366 * 86400

    public init(
        store: ServerKeyStore, verifier: SignInVerifier, realm: String = "default", devIssuer: DevIssuer? = nil,
        limits: RateLimits = .none, metrics: KeyServerMetrics = KeyServerMetrics(), dpop: DPoPPolicy = DPoPPolicy(),
        clientCacheSeconds: Int64 = 3600
    ) throws {
        _ = try KeyName(realm: realm, subject: "-", purpose: "-")
        guard (0...Self.maxClientCacheSeconds).contains(clientCacheSeconds) else {
            throw CofferError(.invalidArgument, "a client may cache a key for 0 to 31,622,400 seconds (366 days)")
        }
        self.clientCacheSeconds = clientCacheSeconds
        self.store = store
        self.verifier = verifier
        self.realm = realm
        self.devIssuer = devIssuer
        self.limits = limits
        self.metrics = metrics
        self.dpop = dpop
    }

    /// The routes and their methods, for `405 Method Not Allowed` (a
    /// `*` stands for any one segment).
    static let routes: [(segments: [Substring], methods: String)] = [
        ("/v1/health", "GET"), ("/v1/ready", "GET"), ("/metrics", "GET"), ("/v1/keys", "POST"), ("/v1/keys/*", "POST"),
        ("/v1/keys/*/versions/*", "GET"),
        ("/v1/admin/keys/rotate", "POST"), ("/v1/admin/keys/retire", "POST"), ("/v1/admin/subjects/shred", "POST"),
        ("/v1/admin/subjects/undo-shred", "POST"),
    ].map { ($0.0.split(separator: "/"), $0.1) }

    /// The methods `path` takes, if it is a route.
    static func methods(of path: String) -> String? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        return routes.first { route in
            route.segments.count == segments.count
                && zip(route.segments, segments).allSatisfy { $0 == "*" ? !$1.isEmpty : $0 == $1 }
        }?.methods
    }

    /// Every route, behind the problem and request-id middleware.
    public func router() -> Router<KeyServerContext> {
        let router = Router(context: KeyServerContext.self)
        // Outermost, so that it sees every answer, problems included.
        router.middlewares.add(MetricsMiddleware(metrics: metrics))
        router.middlewares.add(ProblemMiddleware())
        if limits.refusalDelay > .zero { router.middlewares.add(RefusalDelayMiddleware(limits: limits)) }
        router.middlewares.add(AddressLimitMiddleware(server: self))
        // Liveness: the process answers. Readiness: and so does its database.
        router.get("/v1/health") { _, _ in Self.json(Health(status: "ok")) }
        // Counts and cache rates, no subject; still only for an operator
        // token of the metrics scope (security review 4, H9), so that a
        // balancer that passes every path on exposes nothing.
        router.group("/metrics").add(middleware: OperatorAuthenticator(server: self)).get { _, context in
            _ = try context.operatorActor(.metrics)
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(
                status: .ok, headers: headers,
                body: .init(byteBuffer: ByteBuffer(string: await metrics.exposition(server: self))))
        }
        router.get("/v1/ready") { _, _ in
            try await store.ping()
            return Self.json(Health(status: "ready"))
        }
        // The key routes: the sign-in token (and DPoP proof) checked by
        // their authenticator, the caller in the context.
        let keys = router.group("/v1/keys").add(middleware: UserAuthenticator(server: self))
        keys.post(":purpose") { request, context in
            let caller = try context.caller()
            let body = try await Self.decode(KeyRequest.self, request, emptyAs: KeyRequest(device: nil))
            let key = try await store.current(
                try KeyName(
                    realm: realm, subject: caller.subject, device: try caller.device(body.device),
                    purpose: Self.parameter("purpose", context)),
                proof: caller.proof)
            return KeyResponse.body([KeyResponse(key, cacheSeconds: clientCacheSeconds)], batch: false)
        }
        keys.get(":purpose/versions/:version") { request, context in
            let caller = try context.caller()
            guard let version = Int(try Self.parameter("version", context)), version >= 1 else {
                throw KeyServerError(.invalidVersion, "a version is a whole number from 1")
            }
            let name = try KeyName(
                realm: realm, subject: caller.subject,
                device: try caller.device(request.uri.queryParameters.get("device").map { String($0) }),
                purpose: Self.parameter("purpose", context))
            return KeyResponse.body(
                [
                    KeyResponse(
                        try await store.version(version, of: name, proof: caller.proof),
                        cacheSeconds: clientCacheSeconds)
                ], batch: false)
        }
        keys.post { request, context in
            let caller = try context.caller()
            let body = try await Self.decode(BatchRequest.self, request)
            guard (1...Self.maxBatch).contains(body.purposes.count), Set(body.purposes).count == body.purposes.count
            else {
                throw KeyServerError(.invalidBatch, "a batch names 1 to \(Self.maxBatch) different purposes")
            }
            var keys: [KeyResponse] = []
            for purpose in body.purposes {
                let name = try KeyName(
                    realm: realm, subject: caller.subject, device: try caller.device(body.device), purpose: purpose)
                // The proof is spent with the first key.
                keys.append(
                    KeyResponse(
                        try await store.current(name, proof: keys.isEmpty ? caller.proof : nil),
                        cacheSeconds: clientCacheSeconds))
            }
            return KeyResponse.body(keys, batch: true)
        }
        addAdminRoutes(router)
        if let devIssuer {
            router.post("/v1/dev/token") { request, _ in
                let body = try await Self.decode(DevTokenRequest.self, request)
                _ = try KeyName(realm: realm, subject: body.subject, purpose: "-")
                return Self.json(["token": try await devIssuer.token(subject: body.subject)])
            }
        }
        return router
    }

    static func bearer(_ request: Request) throws -> Substring {
        guard let header = request.headers[.authorization] else {
            throw KeyServerError(.tokenMissing, "the request has no Authorization: Bearer token")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
            throw KeyServerError(.tokenMissing, "the Authorization header is not a Bearer token")
        }
        return parts[1]
    }

    static func parameter(_ name: String, _ context: KeyServerContext) throws -> String {
        guard let value = context.parameters.get(name) else {
            throw KeyServerError(.badRequest, "the route lacks its \(name)")
        }
        return value
    }

    /// A JSON body of at most `maxBodyBytes`, decoded strictly in one
    /// pass (``StrictBody``): an object with no member the route does not
    /// take and no null; an empty body is `emptyAs` when given.
    static func decode<T: RequestBody>(_ type: T.Type, _ request: Request, emptyAs empty: T? = nil) async throws -> T {
        var request = request
        let buffer = try await request.collectBody(upTo: maxBodyBytes)
        if buffer.readableBytes == 0, let empty { return empty }
        do {
            return try JSONDecoder().decode(StrictBody<T>.self, from: Data(buffer.readableBytesView)).value
        } catch {
            throw KeyServerError(
                .bodyMalformed, "the request body is not a JSON object of \(T.members.sorted().joined(separator: ", "))"
            )
        }
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, private: Bool = false) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var headers: HTTPFields = [.contentType: "application/json"]
        if `private` { headers[.cacheControl] = "no-store" }
        return Response(
            status: status, headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: (try? encoder.encode(value)) ?? Data("{}".utf8))))
    }
}
#endif
