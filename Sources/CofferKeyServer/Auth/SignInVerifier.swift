#if Server
import Coffer
import CofferKeyServerCore
import Crypto
import Foundation
import JWTKit

/// What a sign-in token must say to be accepted.
public struct TokenPolicy: Sendable {
    /// `iss`, compared exactly.
    public var issuer: String
    /// Must be `aud`, or one of the strings of an `aud` array.
    public var audience: String
    /// The claim naming the subject: `sub` (the default), or `email`, and
    /// then only with `email_verified` true (``subjectClaims``).
    public var subjectClaim: String
    /// Seconds of clock skew allowed on `exp`, `nbf` and `iat`.
    public var leeway: Int64
    /// How often, at most, an unknown `kid` makes the server read its
    /// issuer's keys again (seconds).
    public var refreshFloor: Int64
    /// The `alg`s a token may have: some of ES256, RS256 and EdDSA (all
    /// three by default; discovery narrows them to what the provider says
    /// it signs ID tokens with).
    public var algorithms: [String]

    public init(
        issuer: String, audience: String, subjectClaim: String = "sub", leeway: Int64 = 60, refreshFloor: Int64 = 30,
        algorithms: [String] = SignInVerifier.supportedAlgorithms
    ) {
        self.issuer = issuer
        self.audience = audience
        self.subjectClaim = subjectClaim
        self.leeway = leeway
        self.refreshFloor = refreshFloor
        self.algorithms = algorithms.filter(SignInVerifier.supportedAlgorithms.contains)
    }

    /// The claims that may name the subject, each with what the verifier
    /// checks before it believes it (security review 3, G14): the subject
    /// is who gets the keys, so the claim must be one the issuer vouches
    /// for and keeps stable. `sub` is the issuer's own identifier for the
    /// user (OpenID Connect Core 1.0, section 2: unique within the issuer
    /// and never reassigned); `email` is accepted only from a token whose
    /// `email_verified` is true, and is only as stable as the user's
    /// address. A name or `preferred_username` may change or be chosen by
    /// the user, and is refused.
    public static let subjectClaims = ["sub", "email"]

    /// Throws unless ``subjectClaim`` is one of ``subjectClaims``.
    public func checkSubjectClaim() throws {
        guard Self.subjectClaims.contains(subjectClaim) else {
            throw CofferError(
                .invalidArgument,
                "the subject claim \(subjectClaim) is not one the verifier checks; use sub, or email (with email_verified)"
            )
        }
    }
}

/// Checks OIDC / JWT bearer tokens against the issuer's keys (a JWKS).
///
/// Only ES256 (P-256), RS256 and EdDSA (Ed25519) are accepted, and only
/// with a key of the matching type: `none`, HMAC and every other
/// algorithm are refused before any signature is checked. The header must
/// name its key (`kid`), and the key must be in the set — a token naming
/// no key or an unknown one is never tried against another key. An
/// unknown `kid` makes the verifier read the set again, at most once per
/// `refreshFloor` seconds, so an issuer's key rotation is picked up.
/// Signatures are checked by jwt-kit; claims here, strictly.
public final class SignInVerifier: Sendable {
    /// What a verified token says.
    public struct SignedIn: Sendable, Hashable {
        public let subject: String
        /// The thumbprint of the DPoP key the token is bound to (`cnf.jkt`).
        public let boundKey: String?
    }

    public static let maxTokenBytes = 8192
    /// Every `alg` a token may ever have.
    public static let supportedAlgorithms = ["ES256", "RS256", "EdDSA"]

    struct IssuerKey: Sendable {
        let algorithm: String
        /// jwt-kit's verifier for the key (RS256, ES256 or EdDSA).
        let verifier: any JWTAlgorithm
    }

    struct State: Sendable {
        var keys: [String: IssuerKey]
        var loaded: Int64
        /// Tokens verified already, by SHA-256: their subject and expiry.
        var verified: [SHA256Digest: (signedIn: SignedIn, expires: Double)] = [:]
        var hits = 0
        var misses = 0

        /// A new key set; tokens verified already are forgotten when a key
        /// they could have been signed with is gone (so a key removed from
        /// the issuer's set stops its tokens at once, not at their expiry).
        mutating func replaceKeys(with fresh: [String: IssuerKey]) {
            if !keys.keys.allSatisfy({ fresh[$0] != nil }) { verified.removeAll() }
            keys = fresh
        }
    }

    /// How often a token was found among those verified already, and how
    /// often it had to be verified (for `/metrics`).
    public var cacheCounts: (hits: Int, misses: Int) { state.withLock { ($0.hits, $0.misses) } }

    /// Verified tokens remembered (the whole memory is cleared when full).
    static let verifiedKept = 10_000

    let policy: TokenPolicy
    let load: @Sendable () async throws -> Data
    let now: @Sendable () -> Int64
    let state: Locked<State>

    /// - Parameters:
    ///   - policy: what a token must say.
    ///   - jwks: reads the issuer's key set (a file's contents, or
    ///     ``issuerKeys(at:http:)`` from its URL); read again on an
    ///     unknown `kid`.
    ///   - now: the clock, in seconds since 1970.
    public init(
        policy: TokenPolicy, jwks: @escaping @Sendable () async throws -> Data,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) async throws {
        try policy.checkSubjectClaim()
        self.policy = policy
        self.load = jwks
        self.now = now
        state = Locked(State(keys: try await Self.parse(await jwks()), loaded: now()))
    }

    /// The subject a valid token names, or a 401 problem saying why not.
    ///
    /// A token that verified once is remembered, by its SHA-256, until it
    /// expires: its signature is not checked again (its expiry is, every
    /// time). An issuer key removed from the JWKS thus stops working for
    /// new tokens at once, and for tokens already seen when they expire.
    public func subject(of token: Substring) async throws -> String { try await signIn(token).subject }

    /// Who a valid token signs in, and the DPoP key it is bound to (its
    /// `cnf.jkt`, RFC 9449 §6), or a 401 problem saying why not. Remembered
    /// as ``subject(of:)`` says.
    public func signIn(_ token: Substring) async throws -> SignedIn {
        guard token.utf8.count <= Self.maxTokenBytes else {
            throw KeyServerError(.tokenMalformed, "the token is over \(Self.maxTokenBytes) bytes")
        }
        let digest = SHA256.hash(data: Data(token.utf8))
        if let seen = state.withLock({ state in
            let seen = state.verified[digest]
            if seen == nil { state.misses += 1 } else { state.hits += 1 }
            return seen
        }) {
            guard Double(now() - policy.leeway) < seen.expires else {
                throw KeyServerError(.tokenExpired, "the token has expired")
            }
            return seen.signedIn
        }
        // Parsed once: the header and claims decoded here, the signature
        // checked over the token's own first two parts by the key's
        // algorithm (JWS, RFC 7515 §5.2), so jwt-kit does not parse the
        // token a second time.
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]).map({ Data($0) }),
            let payloadBytes = Base64URL.decode(parts[1]).map({ Data($0) }), let signature = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerBytes) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: payloadBytes) as? [String: Any]
        else {
            throw KeyServerError(.tokenMalformed, "the token is not a signed JWT (three base64url parts of JSON)")
        }
        guard let algorithm = header["alg"] as? String, policy.algorithms.contains(algorithm) else {
            throw KeyServerError(
                .tokenAlgorithmRefused, "only \(policy.algorithms.joined(separator: ", ")) tokens are accepted")
        }
        guard header["crit"] == nil else {
            throw KeyServerError(.tokenMalformed, "the token has critical header parameters this server does not know")
        }
        guard let kid = header["kid"] as? String else {
            throw KeyServerError(.tokenKeyUnknown, "the token does not name its key (kid)")
        }
        let key = try await issuerKey(kid)
        guard key.algorithm == algorithm else {
            throw KeyServerError(.tokenAlgorithmRefused, "the token's algorithm is not its key's")
        }
        let signingInput = token.utf8[token.utf8.startIndex..<parts[1].utf8.endIndex]
        guard (try? key.verifier.verify(signature, signs: Array(signingInput))) == true else {
            throw KeyServerError(.tokenSignatureInvalid, "the token's signature does not verify")
        }
        var boundKey: String?
        if let confirmation = claims["cnf"] {
            guard let jkt = (confirmation as? [String: Any])?["jkt"] as? String, !jkt.isEmpty else {
                throw KeyServerError(.tokenMalformed, "the token's cnf names no DPoP key (jkt)")
            }
            boundKey = jkt
        }
        let signedIn = SignedIn(subject: try check(claims), boundKey: boundKey)
        if let expires = (claims["exp"] as? NSNumber)?.doubleValue {
            state.withLock { state in
                if state.verified.count >= Self.verifiedKept { state.verified.removeAll(keepingCapacity: true) }
                state.verified[digest] = (signedIn, expires)
            }
        }
        return signedIn
    }

    /// Reads the issuer's key set again now (`coffer-server` on SIGHUP), so
    /// that a key removed from it is refused at once; returns how many keys
    /// it holds. A set that does not read or parse leaves the old one.
    @discardableResult
    public func reloadKeys() async throws -> Int {
        let fresh = try await Self.parse(try await load())
        let time = now()
        state.withLock { state in
            state.replaceKeys(with: fresh)
            state.loaded = time
        }
        return fresh.count
    }

    /// The key `kid` names, reading the set again (rate-limited) when it is unknown.
    func issuerKey(_ kid: String) async throws -> IssuerKey {
        if let key = state.withLock({ $0.keys[kid] }) { return key }
        let now = now()
        let due = state.withLock { state -> Bool in
            guard now - state.loaded >= policy.refreshFloor else { return false }
            state.loaded = now
            return true
        }
        if due, let fresh = try? await Self.parse(await load()) {
            state.withLock { $0.replaceKeys(with: fresh) }
            if let key = fresh[kid] { return key }
        }
        throw KeyServerError(.tokenKeyUnknown, "the token's key is not one of the issuer's")
    }

    func check(_ claims: [String: Any]) throws -> String {
        let now = now()
        guard let exp = (claims["exp"] as? NSNumber)?.doubleValue else {
            throw KeyServerError(.tokenExpired, "the token has no expiry (exp)")
        }
        guard Double(now - policy.leeway) < exp else {
            throw KeyServerError(.tokenExpired, "the token has expired")
        }
        for claim in ["nbf", "iat"] where claims[claim] != nil {
            guard let time = (claims[claim] as? NSNumber)?.doubleValue, time <= Double(now + policy.leeway) else {
                throw KeyServerError(.tokenNotYetValid, "the token is not valid yet (\(claim))")
            }
        }
        guard claims["iss"] as? String == policy.issuer else {
            throw KeyServerError(.tokenIssuerMismatch, "the token is not from this server's issuer")
        }
        let audiences =
            (claims["aud"] as? [Any])?.compactMap { $0 as? String } ?? [claims["aud"] as? String].compactMap { $0 }
        guard audiences.contains(policy.audience) else {
            throw KeyServerError(.tokenAudienceMismatch, "the token is not for this server (aud)")
        }
        guard let subject = claims[policy.subjectClaim] as? String, !subject.isEmpty else {
            throw KeyServerError(
                .tokenSubjectMissing, "the token has no \(policy.subjectClaim) claim naming its subject")
        }
        if policy.subjectClaim == "email" {
            // A boolean, or the string some providers send (Amazon Cognito).
            let verified = claims["email_verified"]
            // (JSON's true, not 1: a boolean's NSNumber has the C type char.)
            let boolean = (verified as? NSNumber).map { String(cString: $0.objCType) == "c" && $0.boolValue }
            guard boolean == true || verified as? String == "true" else {
                throw KeyServerError(
                    .tokenSubjectUnverified, "the token's email is not verified (email_verified is not true)")
            }
        }
        return subject
    }
}
#endif
