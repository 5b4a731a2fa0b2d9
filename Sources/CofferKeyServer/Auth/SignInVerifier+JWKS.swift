#if Server
import AsyncHTTPClient
import Coffer
import CofferKeyServerCore
import Foundation
import JWTKit
import NIOCore
import NIOHTTP1

extension SignInVerifier {
    /// The usable keys of a JWKS by `kid`: RSA keys for RS256 (2048 bits
    /// or more), P-256 keys for ES256, Ed25519 keys for EdDSA. Keys for
    /// encryption, other curves or algorithms, and keys with no `kid` are
    /// left out; a private key in the set is refused (a JWKS is public).
    static func parse(_ data: Data) async throws -> [String: IssuerKey] {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let list = object["keys"] as? [[String: Any]]
        else { throw CofferError(.malformed, "the issuer's key set is not a JWKS (a JSON object with \"keys\")") }
        var keys: [String: IssuerKey] = [:]
        for entry in list {
            guard entry["d"] == nil, entry["p"] == nil, entry["k"] == nil else {
                throw CofferError(
                    .malformed,
                    "the issuer's key set holds a private or symmetric key; a JWKS must hold public keys only")
            }
            guard let kid = entry["kid"] as? String, (entry["use"] as? String ?? "sig") == "sig" else { continue }
            let algorithm: String
            switch (entry["kty"] as? String, entry["crv"] as? String) {
            case ("RSA", _):
                guard let modulus = (entry["n"] as? String).flatMap({ Base64URL.decode($0) }),
                    modulus.drop(while: { $0 == 0 }).count >= 256
                else { continue }
                algorithm = "RS256"
            case ("EC", "P-256"): algorithm = "ES256"
            case ("OKP", "Ed25519"): algorithm = "EdDSA"
            default: continue
            }
            guard (entry["alg"] as? String ?? algorithm) == algorithm else { continue }
            var pinned = entry
            pinned["alg"] = algorithm
            let json = String(decoding: try JSONSerialization.data(withJSONObject: pinned), as: UTF8.self)
            guard let jwk = try? JWK(json: json) else { continue }
            let collection = JWTKeyCollection()
            guard (try? await collection.add(jwk: jwk, isDefault: true)) != nil,
                let verifier = try? await collection.getKey()
            else { continue }
            keys[kid] = IssuerKey(algorithm: algorithm, verifier: verifier)
        }
        guard !keys.isEmpty else {
            throw CofferError(
                .malformed, "the issuer's key set has no usable signing key (ES256, RS256 or EdDSA with a kid)")
        }
        return keys
    }
}

extension SignInVerifier {
    /// The largest key set read from an issuer.
    public static let maxJWKSBytes = 1 << 20

    /// Reads an issuer's JWKS from `url` (its `jwks_uri`): https, or http
    /// on loopback; a 200 answer of at most 1 MiB, within 10 seconds.
    /// Pass it as `jwks:`; the verifier calls it at start and, at most once
    /// per `refreshFloor`, when a token names a key it does not know. A
    /// redirect is followed only within the URL's origin (``IssuerFetch``).
    public static func issuerKeys(at url: URL, http: HTTPClient = IssuerFetch.client) throws
        -> @Sendable () async throws -> Data
    {
        guard url.scheme == "https" || (url.scheme == "http" && Loopback.isHost(url.host)) else {
            throw CofferError(.invalidArgument, "the JWKS URL must be https (http only on loopback)")
        }
        return {
            let response = try await IssuerFetch.get(
                url, what: "the issuer's JWKS", maximumBytes: maxJWKSBytes, http: http)
            guard response.status == .ok else {
                throw CofferError(.malformed, "the issuer's JWKS URL answered \(response.status.code)")
            }
            return Data(response.body.readableBytesView)
        }
    }
}
#endif
