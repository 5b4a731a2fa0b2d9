#if Server
/// What went wrong, in the key server's own terms — a token, a key, a
/// subject, a database — with no HTTP in it. Domain, authentication and
/// storage code throw this; the HTTP edge (`Problem`, in CofferKeyServer) turns it into an
/// RFC 9457 problem document, choosing the status and headers from the
/// code's ``Kind``. ``code`` is stable and documented in docs/openapi.yaml
/// (a test checks ``Code/all`` against it); ``detail`` is for people and
/// never holds a key, a token or anything read from one but the claim names.
public struct KeyServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure, which decides how a client may react.
    public enum Kind: Sendable, Hashable {
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
        /// Too many requests; the count resets in ``KeyServerError/retryAfter`` seconds.
        case rateLimited
        /// The database cannot answer now; trying again shortly may work.
        case unavailable
        /// The server failed; nothing the caller did.
        case failed
    }

    /// A stable, machine-readable code (`token-expired`, `key-shredded`, …)
    /// and its kind. Open, as `CofferError.Code` is: an embedder may make
    /// codes of its own; those the server raises are the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public let kind: Kind

        public init(_ name: String, _ kind: Kind) {
            self.name = name
            self.kind = kind
        }

        public var description: String { name }

        public static let auditFailed = Code("audit-failed", .failed)
        public static let badRequest = Code("bad-request", .invalidInput)
        public static let bodyMalformed = Code("body-malformed", .invalidInput)
        public static let databaseError = Code("database-error", .failed)
        public static let databaseUnavailable = Code("database-unavailable", .unavailable)
        public static let kekUnavailable = Code("kek-unavailable", .unavailable)
        public static let dpopDeviceMismatch = Code("dpop-device-mismatch", .forbidden)
        public static let dpopProofInvalid = Code("dpop-proof-invalid", .proofRefused)
        public static let dpopProofReplayed = Code("dpop-proof-replayed", .proofRefused)
        public static let internalError = Code("internal-error", .failed)
        public static let invalidBatch = Code("invalid-batch", .invalidInput)
        public static let invalidDevice = Code("invalid-device", .invalidInput)
        public static let invalidMinimumVersion = Code("invalid-minimum-version", .invalidInput)
        public static let invalidOperatorName = Code("invalid-operator-name", .invalidInput)
        public static let invalidOperatorExpiry = Code("invalid-operator-expiry", .invalidInput)
        public static let invalidPurpose = Code("invalid-purpose", .invalidInput)
        public static let invalidRealm = Code("invalid-realm", .invalidInput)
        public static let invalidScope = Code("invalid-scope", .invalidInput)
        public static let invalidSubject = Code("invalid-subject", .invalidInput)
        public static let invalidUndoWindow = Code("invalid-undo-window", .invalidInput)
        public static let invalidVersion = Code("invalid-version", .invalidInput)
        public static let keyNotFound = Code("key-not-found", .notFound)
        public static let keyRetired = Code("key-retired", .gone)
        public static let keyShredded = Code("key-shredded", .gone)
        public static let keyUnreadable = Code("key-unreadable", .failed)
        public static let minimumAboveCurrent = Code("minimum-above-current", .conflict)
        public static let operatorExists = Code("operator-exists", .conflict)
        public static let operatorTokenInvalid = Code("operator-token-invalid", .unauthenticated)
        public static let operatorTokenExpired = Code("operator-token-expired", .unauthenticated)
        public static let operatorTokenRefused = Code("operator-token-refused", .forbidden)
        public static let operatorTokenUnbound = Code("operator-token-unbound", .unauthenticated)
        public static let rateLimited = Code("rate-limited", .rateLimited)
        public static let retireBackwards = Code("retire-backwards", .conflict)
        public static let scopeMissing = Code("scope-missing", .forbidden)
        public static let shredNotPending = Code("shred-not-pending", .notFound)
        public static let shredPending = Code("shred-pending", .conflict)
        public static let storeAnchorNotFound = Code("store-anchor-not-found", .notFound)
        public static let subjectUnknown = Code("subject-unknown", .notFound)
        public static let storeAnchorNotNewer = Code("store-anchor-not-newer", .conflict)
        public static let invalidStoreAnchor = Code("invalid-store-anchor", .invalidInput)
        public static let tokenAlgorithmRefused = Code("token-algorithm-refused", .unauthenticated)
        public static let tokenAudienceMismatch = Code("token-audience-mismatch", .unauthenticated)
        public static let tokenExpired = Code("token-expired", .unauthenticated)
        public static let tokenIssuerMismatch = Code("token-issuer-mismatch", .unauthenticated)
        public static let tokenKeyUnknown = Code("token-key-unknown", .unauthenticated)
        public static let tokenMalformed = Code("token-malformed", .unauthenticated)
        public static let tokenMissing = Code("token-missing", .unauthenticated)
        public static let tokenNotYetValid = Code("token-not-yet-valid", .unauthenticated)
        public static let tokenSignatureInvalid = Code("token-signature-invalid", .unauthenticated)
        public static let tokenSubjectMissing = Code("token-subject-missing", .unauthenticated)
        public static let tokenSubjectUnverified = Code("token-subject-unverified", .unauthenticated)

        /// Every code the key server raises, as docs/openapi.yaml lists them.
        public static let all: [Code] = [
            .auditFailed, .badRequest, .bodyMalformed, .databaseError, .databaseUnavailable, .kekUnavailable,
            .dpopDeviceMismatch,
            .dpopProofInvalid, .dpopProofReplayed, .internalError, .invalidBatch, .invalidDevice,
            .invalidMinimumVersion, .invalidOperatorName, .invalidOperatorExpiry, .invalidPurpose, .invalidRealm,
            .invalidScope,
            .invalidSubject, .invalidUndoWindow, .invalidVersion, .keyNotFound, .keyRetired, .keyShredded,
            .keyUnreadable, .minimumAboveCurrent, .operatorExists, .operatorTokenInvalid, .operatorTokenExpired,
            .operatorTokenRefused,
            .operatorTokenUnbound, .rateLimited, .retireBackwards, .scopeMissing, .shredNotPending, .shredPending,
            .storeAnchorNotFound, .storeAnchorNotNewer, .invalidStoreAnchor, .subjectUnknown,
            .tokenAlgorithmRefused, .tokenAudienceMismatch, .tokenExpired, .tokenIssuerMismatch, .tokenKeyUnknown,
            .tokenMalformed, .tokenMissing, .tokenNotYetValid, .tokenSignatureInvalid, .tokenSubjectMissing,
            .tokenSubjectUnverified,
        ]
    }

    public let code: Code
    public let detail: String
    /// For a rate limit: the seconds until its window ends.
    public let retryAfter: Int64?

    public init(_ code: Code, _ detail: String, retryAfter: Int64? = nil) {
        self.code = code
        self.detail = detail
        self.retryAfter = retryAfter
    }

    public var kind: Kind { code.kind }

    public var description: String { "\(code.name): \(detail)" }

    /// Whether the caller is refused before any work is done for it: a
    /// token or proof not accepted, or a rate limit passed.
    package var isRefusal: Bool {
        switch kind {
        case .unauthenticated, .proofRefused, .rateLimited: true
        default: false
        }
    }

    /// A DPoP proof seen before, here or at another replica.
    package static var proofReplayed: KeyServerError {
        KeyServerError(.dpopProofReplayed, "this DPoP proof was used before")
    }
}
#endif
