#if Server
import AsyncHTTPClient
import Coffer
import CofferKeyServerCore
import Foundation
import NIOCore
import NIOHTTP1

/// The GET behind OpenID discovery and the JWKS: a redirect is followed
/// only within the origin asked for (its scheme, host and port), so a
/// fetch never leaves the issuer's https origin and never goes to plain
/// http (security review 4, H5); one that would is refused, naming where
/// it pointed. The client must not follow redirects itself: ``client``
/// does not, and is the default.
public enum IssuerFetch {
    /// A client that follows no redirect (the fetch does, within the origin).
    public static let client = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))

    /// At most this many redirects within the origin.
    public static let maximumRedirects = 5

    /// The answer to a GET of `url`: its status (never a redirect) and up
    /// to `maximumBytes` of its body, within `timeout` for each request.
    static func get(
        _ url: URL, what: String, maximumBytes: Int, http: HTTPClient, timeout: TimeAmount = .seconds(10)
    ) async throws -> (status: HTTPResponseStatus, body: ByteBuffer) {
        var current = url
        for _ in 0...maximumRedirects {
            var request = HTTPClientRequest(url: current.absoluteString)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await http.execute(request, timeout: timeout)
            guard [301, 302, 303, 307, 308].contains(response.status.code) else {
                return (response.status, try await response.body.collect(upTo: maximumBytes))
            }
            guard let location = response.headers.first(name: "Location"),
                let next = URL(string: location, relativeTo: current)?.absoluteURL
            else {
                throw CofferError(.malformed, "\(what) at \(current.absoluteString) redirects nowhere")
            }
            guard Self.origin(of: next) == Self.origin(of: url) else {
                throw CofferError(
                    .refused,
                    "\(what) at \(current.absoluteString) redirects to \(Self.origin(of: next) ?? "an unknown place"), outside \(Self.origin(of: url) ?? "its origin"): only redirects within the issuer's origin are followed (give the final https URL)"
                )
            }
            current = next
        }
        throw CofferError(.malformed, "\(what) at \(url.absoluteString) redirects more than \(maximumRedirects) times")
    }

    /// `scheme://host:port`, the port made explicit; nil without a host.
    static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
        return "\(scheme)://\(host):\(port)"
    }
}
#endif
