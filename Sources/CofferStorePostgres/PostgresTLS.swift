import Coffer
import Foundation
import Logging
import NIOSSL
import PostgresNIO

/// The TLS a PostgreSQL URL asks for (``PostgresURL/sslMode``,
/// ``PostgresURL/sslRootCert``), read as libpq reads `sslmode` and
/// `sslrootcert`: written once, for the record store and the key server.
///
/// - `disable`: never TLS. `prefer`: TLS when the server offers it.
///   `require`: TLS or no connection. Both check the certificate only
///   when an `sslrootcert` is given, and then as `verify-ca` does.
/// - `verify-ca`: the certificate chains to the CAs of `sslrootcert`,
///   else of `~/.postgresql/root.crt` when it exists, else the system's.
/// - `verify-full`: that, and the certificate names the host, as the
///   default for any host off loopback. The host must be a DNS name:
///   postgres-nio gives TLS no IP address to check, so verify-full to an
///   address is always refused (use verify-ca there).
package enum PostgresTLS {
    /// nil for `disable`; else the client configuration and whether a
    /// server without TLS is refused.
    package static func configuration(for url: PostgresURL) throws -> (TLSConfiguration, required: Bool)? {
        if url.sslMode == .disable { return nil }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        let roots = url.sslRootCert ?? defaultRoots(for: url.sslMode)
        switch url.sslMode {
        case .disable: return nil
        case .prefer, .require:
            tls.certificateVerification = roots == nil ? .none : .noHostnameVerification
        case .verifyCA: tls.certificateVerification = .noHostnameVerification
        case .verifyFull: tls.certificateVerification = .fullVerification
        }
        if let roots {
            guard FileManager.default.isReadableFile(atPath: roots) else {
                throw CofferError(.io, "sslrootcert \(roots) cannot be read")
            }
            do {
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(roots))
            } catch {
                throw CofferError(.malformed, "sslrootcert \(roots) holds no PEM certificate")
            }
        }
        return (tls, url.sslMode != .prefer)
    }

    /// libpq's own file, for the modes that verify, when it exists; nil
    /// means the system's trust roots (or none needed).
    private static func defaultRoots(for mode: PostgresURL.SSLMode) -> String? {
        guard mode == .verifyCA || mode == .verifyFull else { return nil }
        let file = NSHomeDirectory() + "/.postgresql/root.crt"
        return FileManager.default.fileExists(atPath: file) ? file : nil
    }

    /// The setting for a single connection (the record store's).
    package static func connectionTLS(for url: PostgresURL) throws -> PostgresConnection.Configuration.TLS {
        guard let (tls, required) = try configuration(for: url) else { return .disable }
        let context: NIOSSLContext
        do { context = try NIOSSLContext(configuration: tls) } catch {
            throw CofferError(.invalidArgument, "the TLS settings for \(url.location) are refused: \(error)")
        }
        return required ? .require(context) : .prefer(context)
    }

    /// The setting for a pool of connections (the key server's).
    package static func clientTLS(for url: PostgresURL) throws -> PostgresClient.Configuration.TLS {
        guard let (tls, required) = try configuration(for: url) else { return .disable }
        return required ? .require(tls) : .prefer(tls)
    }

    /// Why a TLS connection failed, for people: the certificate refused,
    /// or the server has no TLS; nil when the failure was not TLS's.
    package static func reason(_ error: any Error) -> String? {
        var underlying: any Error = error
        if let error = error as? PSQLError {
            if error.code == .sslUnsupported {
                return "the server does not offer TLS, which sslmode requires (sslmode=disable to connect in the clear)"
            }
            if let inner = error.underlying { underlying = inner }
        }
        if let ssl = underlying as? NIOSSLError {
            switch ssl {
            case .handshakeFailed:
                return
                    "the server's certificate was refused (not signed by a CA of sslrootcert, or not for this host under verify-full): \(ssl)"
            default: return "TLS failed: \(ssl)"
            }
        }
        if let ssl = underlying as? BoringSSLError {
            return
                "the server's certificate was refused (not signed by a CA of sslrootcert, or not for this host under verify-full): \(ssl)"
        }
        if let extra = underlying as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return
                "the server's certificate was refused: it does not name this host (verify-full checks the name; postgres-nio passes no IP address to check, so reach the server by a DNS name, or use verify-ca)"
        }
        return nil
    }
}

extension PostgresTLS {
    /// Connects once to `url` as its TLS settings ask, and closes: a pool
    /// (the key server's) retries a refused certificate in silence until
    /// its deadline, so a server checks here at start that the database is
    /// reachable and its certificate accepted, and says why when not.
    package static func probe(_ url: PostgresURL, password: String?, what: String) async throws {
        let configuration = PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.user, password: password, database: url.database,
            tls: try connectionTLS(for: url))
        var logger = Logger(label: "coffer.postgres.probe")
        logger.logLevel = .critical
        do {
            let connection = try await PostgresConnection.connect(
                configuration: configuration, id: 0, logger: logger)
            try await connection.close()
        } catch {
            throw CofferError(
                .io,
                "cannot connect to \(what) at \(url.location): \(reason(error) ?? connectionReason(error))")
        }
    }

    /// A failure before any statement: the socket's own error (refused,
    /// no route, a name not found) when there is one, else the server's.
    static func connectionReason(_ error: any Error) -> String {
        if let error = error as? PSQLError, error.serverInfo == nil, let underlying = error.underlying {
            return "\(underlying)"
        }
        return PostgresStoreConnection.reason(error)
    }
}
