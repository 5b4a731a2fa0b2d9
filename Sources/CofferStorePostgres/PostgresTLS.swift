#if Server
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
    /// A client's TLS configuration, and whether a server without TLS is refused.
    package typealias Settings = (configuration: TLSConfiguration, required: Bool)

    package static func configuration(for url: PostgresURL) throws -> Settings? {
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
    static func connectionTLS(_ settings: Settings?, location: String) throws -> PostgresConnection.Configuration.TLS {
        guard let (tls, required) = settings else { return .disable }
        let context: NIOSSLContext
        do { context = try NIOSSLContext(configuration: tls) } catch {
            throw CofferError(.invalidArgument, "the TLS settings for \(location) are refused: \(error)")
        }
        return required ? .require(context) : .prefer(context)
    }

    /// The setting for a pool of connections (the key server's).
    static func clientTLS(_ settings: Settings?) -> PostgresClient.Configuration.TLS {
        guard let (tls, required) = settings else { return .disable }
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
#endif
