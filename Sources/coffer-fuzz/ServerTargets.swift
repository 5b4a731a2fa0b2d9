import Coffer
import Crypto
import Foundation

#if Server
import CofferKeyServer
import CofferKeyServerCore

/// Targets for what the key server reads from the network: request
/// bodies, sign-in tokens with the issuer's key set and configuration, and
/// DPoP proofs. Inputs whose first byte asks for it are signed here by a
/// key the server trusts, so that the fuzzer reaches the claims' checks
/// behind the signature.
enum ServerTargets {
    static let all: [FuzzTarget] = [bodies, signIn, dpop]

    @Sendable static func isServer(_ error: any Error) -> Bool { error is KeyServerError || error is CofferError }

    static let bodies = FuzzTarget(
        name: "server-bodies", summary: "every request body the key server takes",
        run: { bytes in
            FuzzTarget.expect("JSONBody.decodeEveryBody", { $0 is KeyServerError }) {
                _ = try JSONBody.decodeEveryBody(Data(bytes))
            }
        },
        seeds: {
            [
                #"{"device":"phone"}"#, #"{"purposes":["notes","photos"],"device":"d"}"#,
                #"{"subject":"alice","purpose":"notes","device":"d","minimumVersion":2}"#,
                #"{"subject":"alice","undoWindowSeconds":86400}"#,
                #"{"epoch":3,"sequences":{"t":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16.0]},"digest":"\#(String(repeating: "0f", count: 32))","accept":true}"#,
            ].map { Array($0.utf8) }
        })

    static let issuer = "https://issuer.example"
    static let issuerKey = P256.Signing.PrivateKey()

    static func jwk(_ key: P256.Signing.PublicKey) -> (x: String, y: String) {
        let point = Array(key.x963Representation)
        return (Base64URL.encode(point[1..<33]), Base64URL.encode(point[33...]))
    }

    /// Bytes, not `Data`: LeakSanitizer loses sight of a static `Data`'s
    /// storage behind the spare bits of its representation.
    static let jwks: [UInt8] = {
        let (x, y) = jwk(issuerKey.publicKey)
        return Array(#"{"keys":[{"kty":"EC","crv":"P-256","kid":"fuzz","use":"sig","x":"\#(x)","y":"\#(y)"}]}"#.utf8)
    }()

    static let policy = TokenPolicy(issuer: issuer, audience: "coffer")

    static let verifier: SignInVerifier = {
        nonisolated(unsafe) var made: SignInVerifier?
        FuzzTarget.blocking { made = try? await SignInVerifier(policy: policy, jwks: { Data(jwks) }) }
        return made!
    }()

    /// A compact JWS over `header` and `claims` by `key` (ES256).
    static func signed(header: some Collection<UInt8>, claims: some Collection<UInt8>, by key: P256.Signing.PrivateKey)
        -> String
    {
        let input = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = (try? key.signature(for: Data(input.utf8)).rawRepresentation) ?? Data()
        return input + "." + Base64URL.encode(signature)
    }

    /// By the first byte: 0, the rest is a token; 1, the rest is a token's
    /// claims, signed by the issuer's key; 2, the rest is the issuer's key
    /// set; 3, its OpenID configuration.
    static let signIn = FuzzTarget(
        name: "sign-in", summary: "sign-in tokens, the issuer's JWKS and its OpenID configuration",
        run: { bytes in
            guard let mode = bytes.first else { return }
            let rest = Array(bytes.dropFirst())
            switch mode % 4 {
            case 0, 1:
                let token =
                    mode % 4 == 0
                    ? String(decoding: rest, as: UTF8.self)
                    : signed(header: Array(#"{"alg":"ES256","kid":"fuzz"}"#.utf8), claims: rest, by: issuerKey)
                FuzzTarget.expect("SignInVerifier.signIn", isServer) { _ = try await verifier.signIn(Substring(token)) }
            case 2:
                FuzzTarget.expect("SignInVerifier(jwks:)", isServer) {
                    _ = try await SignInVerifier(policy: policy, jwks: { Data(rest) })
                }
            default:
                FuzzTarget.expect("IssuerDiscovery.parse", isServer) {
                    _ = try IssuerDiscovery.parse(Data(rest), issuer: issuer)
                }
            }
        },
        seeds: {
            let now = Int(Date().timeIntervalSince1970)
            let claims =
                #"{"iss":"\#(issuer)","aud":"coffer","sub":"alice","iat":\#(now),"exp":\#(now + 600),"cnf":{"jkt":"abc"}}"#
            let configuration = #"{"issuer":"\#(issuer)","jwks_uri":"\#(issuer)/jwks"}"#
            return [
                [0]
                    + Array(
                        signed(
                            header: Array(#"{"alg":"ES256","kid":"fuzz"}"#.utf8), claims: Array(claims.utf8),
                            by: issuerKey
                        ).utf8),
                [1] + Array(claims.utf8), [2] + jwks, [3] + Array(configuration.utf8),
            ]
        })

    static let proofKey = P256.Signing.PrivateKey()
    static let targetURL = "https://keys.example/v1/keys/notes"
    static let accessToken: Substring = "a.token.here"
    static let headers = DPoPHeaders()

    static var proofHeader: String {
        let (x, y) = jwk(proofKey.publicKey)
        return #"{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x":"\#(x)","y":"\#(y)"}}"#
    }

    static func proofClaims(now: Int64) -> String {
        let ath = Base64URL.encode(Array(SHA256.hash(data: Data(accessToken.utf8))))
        return #"{"jti":"j1","htm":"POST","htu":"\#(targetURL)","iat":\#(now),"ath":"\#(ath)","nonce":"n"}"#
    }

    /// By the first byte: 0, the rest is a proof; 1, the rest is a proof's
    /// claims under a good header, signed; 2, the rest is a proof's header
    /// over good claims, signed by the key the good header names.
    static let dpop = FuzzTarget(
        name: "dpop", summary: "DPoP proofs (RFC 9449): header, jwk, claims, signature",
        run: { bytes in
            guard let mode = bytes.first else { return }
            let rest = Array(bytes.dropFirst())
            let now: Int64 = 1_800_000_000
            let proof: String
            switch mode % 3 {
            case 0: proof = String(decoding: rest, as: UTF8.self)
            case 1: proof = signed(header: Array(proofHeader.utf8), claims: rest, by: proofKey)
            default: proof = signed(header: rest, claims: Array(proofClaims(now: now).utf8), by: proofKey)
            }
            FuzzTarget.expect("DPoPProof.check", { $0 is KeyServerError }) {
                _ = try DPoPProof.check(
                    proof, method: "POST", accepts: { $0 == targetURL }, accessToken: accessToken, now: now,
                    leeway: 60, headers: headers)
            }
        },
        seeds: {
            let now: Int64 = 1_800_000_000
            return [
                [0]
                    + Array(
                        signed(header: Array(proofHeader.utf8), claims: Array(proofClaims(now: now).utf8), by: proofKey)
                            .utf8),
                [1] + Array(proofClaims(now: now).utf8), [2] + Array(proofHeader.utf8),
            ]
        })
}

#else
enum ServerTargets {
    /// Built without the Server trait: no server targets.
    static let all: [FuzzTarget] = []
}
#endif
