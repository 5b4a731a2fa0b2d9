#if Server
import Coffer
import CofferKeyServerCore
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle

/// How `coffer-server serve` runs a ``KeyServer``: where it listens, with
/// which TLS, client limits, background work and log.
public struct KeyServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// HTTPS with this configuration; nil for plain HTTP (loopback only,
    /// which `coffer-server` enforces).
    public var tls: TLSConfiguration?
    public var clients: ClientLimits
    /// How often the shred sweep and the KEK reading run.
    public var maintenanceInterval: Duration
    /// How often the audit chain's head is anchored.
    public var auditAnchorInterval: Duration
    /// Where each anchor's checkpoint line goes besides the database.
    public var auditCheckpoint: (@Sendable (String) throws -> Void)?
    /// Events at `info`; each request's access line at `debug`.
    public var logger: Logger
    /// Called with the port once the server listens.
    public var onListening: @Sendable (Int) async -> Void

    public init(
        host: String = "127.0.0.1", port: Int = 8080, tls: TLSConfiguration? = nil,
        clients: ClientLimits = ClientLimits(),
        maintenanceInterval: Duration = .seconds(30), auditAnchorInterval: Duration = .seconds(60),
        auditCheckpoint: (@Sendable (String) throws -> Void)? = nil, logger: Logger = Logger(label: "coffer-server"),
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) {
        self.host = host
        self.port = port
        self.tls = tls
        self.clients = clients
        self.maintenanceInterval = maintenanceInterval
        self.auditAnchorInterval = auditAnchorInterval
        self.auditCheckpoint = auditCheckpoint
        self.logger = logger
        self.onListening = onListening
    }

    /// The policies a key server is run under, whoever runs it
    /// (``buildApplication(_:_:)`` checks them, so an embedder inherits
    /// what `coffer-server serve` enforces): plain HTTP only on loopback;
    /// DPoP required off loopback only with the public URL proofs are
    /// checked against (never the request's Host); the development issuer
    /// only over plain HTTP on loopback. Throws `invalidArgument` saying which.
    public func validate(for server: KeyServer) throws {
        let loopback = Loopback.isHost(host)
        guard tls != nil || loopback else {
            throw CofferError(
                .invalidArgument,
                "plain HTTP is served on loopback only (127.0.0.1, ::1); give a TLS certificate and key to listen on \(host)"
            )
        }
        guard !server.dpop.required || server.dpop.publicURL != nil || loopback else {
            throw CofferError(
                .invalidArgument,
                "requiring DPoP off loopback needs the public URL: a proof's URL is checked against it, never against the request's Host"
            )
        }
        guard server.devIssuer == nil || (tls == nil && loopback) else {
            throw CofferError(.invalidArgument, "the development issuer serves plain HTTP on loopback only")
        }
    }
}

/// The key server as a Hummingbird application, as `coffer-server serve`
/// and the tests run it, after ``KeyServerConfiguration/validate(for:)``: `server`'s routes over HTTP/1.1 (with TLS when
/// configured) and the client limits, and the background work as
/// services of the application's service group (`MaintenanceService`,
/// `AuditAnchorService`), stopped gracefully with it.
///
/// ```swift
/// let app = try buildApplication(server, KeyServerConfiguration(port: 8443, tls: tls))
/// try await app.runService()
/// ```
public func buildApplication(_ server: KeyServer, _ configuration: KeyServerConfiguration) throws
    -> some ApplicationProtocol
{
    try configuration.validate(for: server)
    let http1 = HTTPServerBuilder.http1(
        configuration: configuration.clients.http1(trusting: server.limits.trustedProxies))
    let builder = try configuration.tls.map { try HTTPServerBuilder.tls(http1, tlsConfiguration: $0) } ?? http1
    let onListening = configuration.onListening
    return Application(
        router: server.router(),
        server: builder,
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port), serverName: "coffer-server"),
        services: [
            MaintenanceService(
                store: server.store, interval: configuration.maintenanceInterval, logger: configuration.logger),
            AuditAnchorService(
                store: server.store, interval: configuration.auditAnchorInterval,
                checkpoint: configuration.auditCheckpoint, logger: configuration.logger),
        ],
        onServerRunning: { channel in await onListening(channel.localAddress?.port ?? configuration.port) },
        logger: configuration.logger)
}
#endif
