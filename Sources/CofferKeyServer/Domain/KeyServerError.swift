#if Server
/// What went wrong, in the key server's own terms — a token, a key, a
/// subject, a database — with no HTTP in it. Domain, authentication and
/// storage code throw this; the HTTP edge (``Problem``) turns it into an
/// RFC 9457 problem document, choosing the status and headers from
/// ``kind``. ``code`` is stable and documented in docs/openapi.yaml;
/// ``detail`` is for people and never holds a key, a token or anything
/// read from one but the claim names.
public struct KeyServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure, which decides how a client may react.
    public enum Kind: Sendable, Equatable {
        /// The request names or carries something malformed.
        case invalidInput
        /// A sign-in or operator token was missing or not accepted.
        case unauthenticated
        /// A DPoP proof was not accepted (malformed, badly signed, replayed).
        case proofRefused
        /// The caller is known but may not do this.
        case forbidden
        case notFound
        /// The request conflicts with the state (a pending shred, a version).
        case conflict
        /// What was asked for existed and is gone for good.
        case gone
        /// Too many requests; the count resets in `retryAfter` seconds.
        case rateLimited(retryAfter: Int64)
        /// The database cannot answer now; trying again shortly may work.
        case unavailable
        /// The server failed; nothing the caller did.
        case failed
    }

    public let kind: Kind
    /// Stable, machine-readable: `token-expired`, `key-shredded`, …
    public let code: String
    public let detail: String

    public init(_ kind: Kind, _ code: String, _ detail: String) {
        self.kind = kind
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code): \(detail)" }

    static func unauthenticated(_ code: String, _ detail: String) -> KeyServerError {
        KeyServerError(.unauthenticated, code, detail)
    }

    static func invalidInput(_ code: String, _ detail: String) -> KeyServerError {
        KeyServerError(.invalidInput, code, detail)
    }

    /// Whether the caller is refused before any work is done for it: a
    /// token or proof not accepted, or a rate limit passed.
    var isRefusal: Bool {
        switch kind {
        case .unauthenticated, .proofRefused, .rateLimited: true
        default: false
        }
    }
}
#endif
