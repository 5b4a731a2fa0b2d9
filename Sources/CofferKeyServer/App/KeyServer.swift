#if Server
import Coffer
import CofferKeyServerCore
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
    /// The DPoP check, with the proof headers seen before and the nonces.
    let proofs: DPoPCheck
    public static let maxBodyBytes = JSONBody.maxBytes
    public static let maxBatch = KeyController.maxBatch
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
        self.proofs = DPoPCheck(policy: dpop, store: store)
    }

    /// The routes, as controllers over the store, each group behind its
    /// authenticator and the shared rate limits.
    var controllers: [any KeyServerController] {
        let shared = SharedRateLimitMiddleware(limiting: RateLimiting(limits: limits, store: store, realm: realm))
        let operators = OperatorAuthenticator(operators: store, realm: realm)
        let users = UserAuthenticator(verifier: verifier, proofs: proofs)
        var controllers: [any KeyServerController] = [
            HealthController(store: store),
            MetricsController(authenticator: operators, limits: shared) { [self] in
                await metrics.exposition(server: self)
            },
            KeyController(
                store: store, realm: realm, clientCacheSeconds: clientCacheSeconds,
                authenticator: users,
                limits: SharedRateLimitMiddleware(limiting: shared.limiting, releasing: true)),
            AdminController(store: store, realm: realm, authenticator: operators, limits: shared),
            ServiceKeyController(
                store: store, realm: realm, authenticator: operators,
                limits: SharedRateLimitMiddleware(limiting: shared.limiting, releasing: true)),
            StoreAnchorController<OperatorAuthenticator>.fleet(
                store: store, realm: realm, authenticator: operators, limits: shared),
            StoreAnchorController<UserAuthenticator>.user(
                store: store, realm: realm, authenticator: users, limits: shared),
        ]
        if let devIssuer { controllers.append(DevTokenController(issuer: devIssuer, realm: realm)) }
        return controllers
    }

    /// Every route, behind the metrics, problem, refusal-delay and
    /// address-limit middleware; the `405` table made from the same
    /// controllers.
    public func router() -> Router<KeyServerContext> {
        let controllers = self.controllers
        let router = Router(context: KeyServerContext.self)
        // Outermost, so that it sees every answer, problems included.
        router.middlewares.add(MetricsMiddleware(metrics: metrics))
        router.middlewares.add(ProblemMiddleware(routes: RouteTable(controllers)))
        if limits.refusalDelay > .zero { router.middlewares.add(RefusalDelayMiddleware(limits: limits)) }
        router.middlewares.add(
            AddressLimitMiddleware(limiting: RateLimiting(limits: limits, store: store, realm: realm)))
        for controller in controllers {
            let group = controller.guarding(router.group(RouterPath(controller.path)))
            for endpoint in controller.endpoints {
                group.on(RouterPath(endpoint.path), method: endpoint.method, use: endpoint.respond)
            }
        }
        return router
    }
}
#endif
