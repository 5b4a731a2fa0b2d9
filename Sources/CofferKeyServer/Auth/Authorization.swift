#if Server
import CofferKeyServerCore
import HTTPTypes
import Hummingbird

/// A request's credentials, from its `Authorization` header (RFC 9110
/// §11.6.2, RFC 6750 §2.1, RFC 9449 §7.1): a scheme and a token. The one
/// parser of that header; each authenticator says which schemes it takes.
struct Authorization: Sendable {
    enum Scheme: String, Sendable {
        case bearer
        case dpop
    }

    let scheme: Scheme
    let token: Substring

    /// The header's scheme (case-insensitive) and token, when the scheme is
    /// one of `accepted`; otherwise `401 token-missing`.
    init(_ request: Request, accepting accepted: Set<Scheme>) throws {
        let named = accepted.contains(.dpop) ? "Bearer or DPoP" : "Bearer"
        guard let header = request.headers[.authorization] else {
            throw KeyServerError(.tokenMissing, "the request has no Authorization: \(named) token")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, !parts[1].isEmpty, let scheme = Scheme(rawValue: parts[0].lowercased()),
            accepted.contains(scheme)
        else {
            throw KeyServerError(.tokenMissing, "the Authorization header is not a \(named) token")
        }
        self.scheme = scheme
        self.token = parts[1]
    }
}
#endif
