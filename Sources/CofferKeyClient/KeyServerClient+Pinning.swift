import AsyncHTTPClient
import Foundation
import NIOSSL

extension KeyServerClient {
    /// An HTTP client that trusts only `certificatesPEM` — the key
    /// server's own certificate, or the CA that issues it — and none of the
    /// system's roots: a certificate from any other CA, however valid, is
    /// refused. TLS 1.2 or later, host names checked. Pass it as `http:`;
    /// the caller owns it and shuts it down (`try await client.shutdown()`).
    public static func pinnedHTTPClient(trusting certificatesPEM: String) throws -> HTTPClient {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(Array(certificatesPEM.utf8))
        } catch {
            throw KeyClientError(.invalidArgument, "the pinned certificates are not PEM certificates")
        }
        guard !certificates.isEmpty else {
            throw KeyClientError(.invalidArgument, "no certificate to pin")
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(certificates)
        tls.minimumTLSVersion = .tlsv12
        return HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
    }
}
