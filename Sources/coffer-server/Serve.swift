#if Server
import ArgumentParser
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import CofferPKCS11
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import Metrics
import NIOCore
import NIOSSL
import ServiceLifecycle
import UnixSignals
import Prometheus

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serves keys over HTTP (plain HTTP on loopback only).")

    @Option(
        help: ArgumentHelp("Where to listen (default 127.0.0.1:8080); port 0 picks a free one.", valueName: "HOST:PORT")
    )
    var listen: String?

    @OptionGroup var data: DataOptions

    @Option(help: ArgumentHelp("The token issuer, compared with iss exactly.", valueName: "URL"))
    var issuer: String?

    @Option(help: ArgumentHelp("This server's audience: aud must name it.", valueName: "AUD"))
    var audience: String?

    @Option(help: ArgumentHelp("The issuer's keys, a JWKS file (read again on an unknown kid).", valueName: "FILE"))
    var jwksFile: String?

    @Option(
        help: ArgumentHelp("The issuer's keys from its jwks_uri (fetched again on an unknown kid).", valueName: "URL"))
    var jwksURL: String?

    @Option(
        help: ArgumentHelp(
            "Read the issuer's keys again on an unknown kid at most once in SECONDS (default 30).",
            valueName: "SECONDS"))
    var jwksRefreshFloor: Int64?

    @Flag(
        help:
            "Find the issuer's keys and algorithms in ISSUER/.well-known/openid-configuration (also when neither --jwks-file nor --jwks-url is given)."
    )
    var issuerDiscovery = false

    @Option(help: ArgumentHelp("The claim that names the subject (default sub).", valueName: "NAME"))
    var subjectClaim: String?

    @Option(help: ArgumentHelp("The realm of every key this server releases (default default).", valueName: "NAME"))
    var realm: String?

    @Option(
        help: ArgumentHelp("At most N requests per subject in SECONDS, across all replicas.", valueName: "N/SECONDS"))
    var rateLimit: String?

    @Option(
        help: ArgumentHelp(
            "At most N requests per client address in SECONDS, across all replicas.", valueName: "N/SECONDS"))
    var addressRateLimit: String?

    @Option(
        help: ArgumentHelp(
            "Answer a refused token (401) or an address past its limit (429) after this long (default 100).",
            valueName: "MS"))
    var refusalDelay: Int?

    @Option(help: ArgumentHelp("Seconds of clock skew allowed on exp, nbf and iat (default 60).", valueName: "SECONDS"))
    var leeway: Int64?

    @Flag(
        help:
            "Development: a throwaway folder and KEK, and a built-in issuer whose tokens POST /v1/dev/token gives (loopback only; never for production)."
    )
    var dev = false

    @Flag(help: "Refuse key requests without a DPoP proof (RFC 9449): a bearer token alone obtains nothing.")
    var requireDpop = false

    @Option(
        help: ArgumentHelp(
            "The URL clients reach this server at; DPoP proofs must name it (needed for DPoP off loopback).",
            valueName: "URL"))
    var publicUrl: String?

    @OptionGroup(title: "Connections") var connections: ConnectionOptions

    @Option(
        help: ArgumentHelp(
            "How long a client may keep a key without asking again (default 3600; 0: not at all).",
            valueName: "SECONDS"))
    var clientCacheSeconds: Int64?

    @Option(help: ArgumentHelp("Anchor the audit chain's head this often (default 60).", valueName: "SECONDS"))
    var auditAnchorEvery: Double?

    @Option(
        help: ArgumentHelp(
            "Append each anchor as a checkpoint line to FILE (- for standard output).", valueName: "FILE"))
    var auditCheckpoint: String?

    @Option(
        help: ArgumentHelp(
            "trace, debug, info (default: a line per request), notice, warning, error or critical.",
            valueName: "LEVEL"))
    var logLevel: String?

    @Option(help: ArgumentHelp("text (default) or json: one JSON object per line.", valueName: "FORMAT"))
    var logFormat: String?

    @Option(
        help: ArgumentHelp(
            "Send spans over OTLP/HTTP to this receiver (http://127.0.0.1:4318: to /v1/traces). Off by default.",
            valueName: "URL"))
    var otelEndpoint: String?

    @Option(help: ArgumentHelp("Serve HTTPS with this certificate chain (PEM).", valueName: "F"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("The certificate's private key (PEM; yours, closed to others).", valueName: "F"))
    var tlsKey: String?

    func run() async throws {
        let settings = try await data.settings()
        try bootstrapLog(settings)
        let (host, port) = try Self.address(settings.value(listen, "listen") ?? "127.0.0.1:8080")
        let certificate = try serverCertificate(settings)
        let tls = certificate?.configuration()
        var limits = RateLimits(
            subject: try Self.limit(settings.value(rateLimit, "rate-limit"), flag: "--rate-limit"),
            address: try Self.limit(
                settings.value(addressRateLimit, "address-rate-limit"), flag: "--address-rate-limit"),
            refusalDelay: try refusalDelay(settings))
        limits.trustedProxies = try connections.trustedProxies(settings)
        let dpop = DPoPPolicy(
            required: requireDpop || settings.value(nil, "require-dpop") == "true",
            publicURL: try Self.publicURL(settings.value(publicUrl, "public-url")))
        guard !dpop.required || dpop.publicURL != nil || Loopback.isHost(host) else {
            throw ValidationError(
                "--require-dpop needs --public-url off loopback: a proof's URL is checked against it, never against the request's Host"
            )
        }
        guard tls != nil || Loopback.isHost(host) else {
            throw ValidationError(
                "plain HTTP is served on loopback only (127.0.0.1, ::1); give --tls-cert and --tls-key to listen on \(host)"
            )
        }
        let clients = try connections.clientLimits(settings)
        let cacheText = clientCacheSeconds.map(String.init) ?? settings.value(nil, "client-cache-seconds") ?? "3600"
        guard let cacheSeconds = Int64(cacheText), (0...KeyServer.maxClientCacheSeconds).contains(cacheSeconds) else {
            throw ValidationError("--client-cache-seconds is 0 to 31,622,400 (366 days), not \(cacheText)")
        }
        let claim = settings.value(subjectClaim, "subject.claim") ?? "sub"
        guard TokenPolicy.subjectClaims.contains(claim) else {
            throw ValidationError(
                "--subject-claim \(claim) is not a claim the server checks; use sub, or email (accepted with email_verified true)"
            )
        }
        let devIssuer = dev ? try await DevIssuer() : nil
        let store = try await (dev ? try developmentData() : data).open(settings, creating: dev)
        let verifier: SignInVerifier
        if let devIssuer {
            guard tls == nil, Loopback.isHost(host) else {
                throw ValidationError("--dev serves plain HTTP on loopback only")
            }
            let jwks = devIssuer.jwks
            verifier = try await SignInVerifier(policy: devIssuer.policy, jwks: { jwks })
            FileHandle.standardError.write(
                Data("coffer-server: development mode: anyone who reaches this server can sign in as anyone\n".utf8))
        } else {
            let issuer = try settings.required(issuer, "issuer", flag: "--issuer")
            let audience = try settings.required(audience, "audience", flag: "--audience")
            let (keys, algorithms) = try await issuerKeys(settings, issuer: issuer)
            let policy = TokenPolicy(
                issuer: issuer, audience: audience, subjectClaim: claim,
                leeway: try leeway ?? settings.value(nil, "leeway").map(Self.seconds) ?? 60,
                refreshFloor: try jwksRefreshFloor ?? settings.value(nil, "jwks.refresh-floor").map(Self.seconds) ?? 30,
                algorithms: algorithms)
            verifier = try await SignInVerifier(policy: policy, jwks: keys)
        }
        // The server's registry is also swift-metrics' backend, so what any
        // library reports through swift-metrics is served on /metrics too.
        let metrics = KeyServerMetrics()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics.registry))
        let server = try KeyServer(
            store: store, verifier: verifier, realm: settings.value(realm, "realm") ?? "default", devIssuer: devIssuer,
            limits: limits, metrics: metrics, dpop: dpop, clientCacheSeconds: cacheSeconds)
        var logger = Logger(label: "coffer-server")
        logger.logLevel = try logLevel(settings)
        store.logDatabaseAvailability(to: logger)
        let traces = try tracing(settings, logger: logger)
        logStart(logger, settings, store: store, tls: tls != nil)
        let anchoring = try auditAnchoring(settings)
        if let last = anchoring.last { store.trustAuditAnchor(last) }
        let app = try buildApplication(
            server,
            KeyServerConfiguration(
                host: host, port: port, tls: tls, clients: clients, auditAnchorInterval: anchoring.interval,
                auditCheckpoint: anchoring.checkpoint, logger: logger,
                onListening: { port in
                    // The one line a supervisor or a test reads to find the port.
                    FileHandle.standardOutput.write(Data("coffer-server: listening on \(host):\(port)\n".utf8))
                }))
        ShutdownDeadline.arm(logger: logger)
        // The sweep, the KEK reading and the audit anchors run as the
        // application's services, and stop with it.
        // Graceful shutdown on SIGTERM or SIGINT, bounded by the service
        // group itself; ShutdownDeadline is the backstop should a task
        // ignore its cancellation.
        // With the KEK in an HSM, its token is checked every 5 seconds:
        // while it does not answer, what needs the KEK answers 503.
        let holder = try (dev ? nil : data.kekHSM(settings)).map { hsm in
            KEKHolderService(store: store, logger: logger) { try hsm.prepare(creating: false) }
        }
        // SIGHUP reloads the log level and the issuer's keys (ReloadService).
        let reload = ReloadService(
            verifier: verifier, certificate: certificate, level: { [self] in try logLevel(try await data.settings()) },
            logger: logger)
        var group = ServiceGroupConfiguration(
            // The span exporter first, so that it stops last and sends the
            // spans of the requests the server finished while stopping.
            services: (traces.map { [$0] } ?? []) + [app, reload] + (holder.map { [$0] } ?? []),
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        group.maximumGracefulShutdownDuration = ShutdownDeadline.grace
        try await ServiceGroup(configuration: group).run()
        await store.close()
    }

    static func publicURL(_ text: String?) throws -> String? {
        guard let text else { return nil }
        guard let url = URLComponents(string: text), ["http", "https"].contains(url.scheme), url.host != nil,
            url.query == nil, url.fragment == nil, url.path.isEmpty || url.path == "/"
        else { throw ValidationError("--public-url is a scheme and host, like https://keys.example.com, not \(text)") }
        return text
    }

    static func seconds(_ text: String) throws -> Int64 {
        guard let value = Int64(text), (0...3600).contains(value) else {
            throw ValidationError("the leeway is 0 to 3600 seconds, not \(text)")
        }
        return value
    }

    static func address(_ text: String) throws -> (String, Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { throw ValidationError("--listen takes HOST:PORT, not \(text)") }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }
}

#endif
