#if Server
import AsyncHTTPClient
import CofferKeyClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// The key client over AsyncHTTPClient, for a server-side Swift service
/// that already runs SwiftNIO (an app uses `URLSessionTransport`, the
/// default, and links none of this).
///
/// ```swift
/// let http = try AsyncHTTPClientTransport.pinnedHTTPClient(trusting: caPEM)
/// let client = try KeyServerClient(
///     server: url, account: user, token: { token }, transport: AsyncHTTPClientTransport(http))
/// // … and when done: try await http.shutdown()
/// ```
public struct AsyncHTTPClientTransport: KeyServerTransport {
    public let client: HTTPClient

    /// `client`: by default one shared client of this module's
    /// (`configuration(tls:)`: a refused connection is reported at once);
    /// the caller owns any other and shuts it down.
    public init(_ client: HTTPClient = AsyncHTTPClientTransport.shared) { self.client = client }

    /// Like `HTTPClient.shared`, lives as long as the process; never shut it down.
    public static let shared = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration())

    /// AsyncHTTPClient's settings for a key client: TLS as given, and a
    /// connection that fails is not tried again until the timeout (a server
    /// that is down is said at once, as `URLSessionTransport` says it).
    public static func configuration(tls: TLSConfiguration? = nil) -> HTTPClient.Configuration {
        // No redirect is followed: a key server never sends one, and a
        // request's bearer token and DPoP proof are for its own URL.
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        return configuration
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(outgoing, timeout: TimeAmount(request.timeout))
        } catch {
            throw TransportFailure(Self.reason(error))
        }
        let body: ByteBuffer
        do {
            body = try await response.body.collect(upTo: request.maxResponseBytes)
        } catch {
            throw TransportFailure.tooLarge(request.maxResponseBytes)
        }
        return TransportResponse(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
            body: Data(body.readableBytesView))
    }

    static func reason(_ error: any Error) -> String {
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout, .deadlineExceeded, .readTimeout: return "no answer in time"
            case .remoteConnectionClosed: return "the server closed the connection"
            default: return "HTTPClientError \(error)"
            }
        }
        if error is NIOSSLError || error is BoringSSLError { return "TLS failed: the server's certificate was refused" }
        if let error = error as? IOError { return "\(error)" }
        return "\(type(of: error))"
    }

    /// An HTTP client that trusts only `certificatesPEM` — the key
    /// server's own certificate, or the CA that issues it — and none of the
    /// system's roots: a certificate from any other CA, however valid, is
    /// refused. TLS 1.2 or later, host names checked. The caller owns it and
    /// shuts it down (`try await client.shutdown()`).
    public static func pinnedHTTPClient(trusting certificatesPEM: String) throws -> HTTPClient {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(Array(certificatesPEM.utf8))
        } catch {
            throw KeyClientError.invalidArgument("the pinned certificates are not PEM certificates")
        }
        guard !certificates.isEmpty else { throw KeyClientError.invalidArgument("no certificate to pin") }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(certificates)
        tls.minimumTLSVersion = .tlsv12
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration(tls: tls))
    }
}
#endif
