#if Server
import CofferKeyServerCore
import Foundation
import JWTKit

/// A stand-in identity provider for development and the tour: an ES256 key
/// made in memory, its JWKS, and sign-in tokens for any subject. A server
/// given one (`coffer-server serve --dev`, loopback only) also answers
/// `POST /v1/dev/token`. Never for production: anyone who can reach the
/// server can sign in as anyone.
public struct DevIssuer: Sendable {
    public static let issuer = "coffer-dev"
    public static let audience = "coffer-dev"
    let keys: JWTKeyCollection
    /// The issuer's key set, to give ``SignInVerifier``.
    public let jwks: Data

    public init() async throws {
        let key = ES256PrivateKey()
        keys = JWTKeyCollection()
        await keys.add(ecdsa: key, kid: "dev")
        guard let parameters = key.publicKey.parameters else {
            throw KeyServerError(.internalError, "the development key has no parameters")
        }
        jwks = try JSONSerialization.data(withJSONObject: [
            "keys": [["kty": "EC", "crv": "P-256", "x": parameters.x, "y": parameters.y, "kid": "dev", "alg": "ES256"]]
        ])
    }

    /// The policy that accepts this issuer's tokens.
    public var policy: TokenPolicy { TokenPolicy(issuer: Self.issuer, audience: Self.audience) }

    /// A token for `subject`, valid for an hour.
    public func token(subject: String) async throws -> String {
        let now = Date()
        return try await keys.sign(
            DevClaims(
                sub: SubjectClaim(value: subject), iss: IssuerClaim(value: Self.issuer),
                aud: AudienceClaim(value: [Self.audience]), iat: IssuedAtClaim(value: now),
                exp: ExpirationClaim(value: now.addingTimeInterval(3600))),
            kid: "dev")
    }

    struct DevClaims: JWTPayload {
        let sub: SubjectClaim
        let iss: IssuerClaim
        let aud: AudienceClaim
        let iat: IssuedAtClaim
        let exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}
#endif
