#if Server
import Coffer
import Foundation
import HTTPTypes
import Hummingbird

/// Who is asking: the token's subject and, with a DPoP proof, the
/// thumbprint of the key that signed it.
struct Caller: Sendable {
    let subject: String
    let proofKey: String?
    /// The proof's replay hash, recorded in the transaction that releases
    /// the key (where a replay is refused).
    let proof: ProofUse?

    /// The device a request names, checked against its proof: with DPoP the
    /// device is the proof key's (`jkt:` and its thumbprint), and a device
    /// named `jkt:…` is only ever the key that proves it.
    func device(_ named: String?) throws -> String {
        if let proofKey {
            let bound = "jkt:" + proofKey
            guard named == nil || named == bound else {
                throw KeyServerError(
                    .dpopDeviceMismatch,
                    "with DPoP, the device is the proof key's thumbprint (jkt:…); omit device or name that one")
            }
            return bound
        }
        guard let named, named.hasPrefix("jkt:") else { return named ?? "" }
        throw KeyServerError(.dpopDeviceMismatch, "a device named jkt:… needs a DPoP proof by that key")
    }
}

extension KeyServer {
    static var dpopField: HTTPField.Name { HTTPField.Name("DPoP")! }
    static var dpopNonceField: HTTPField.Name { HTTPField.Name("DPoP-Nonce")! }

    static func dpopRequired(_ detail: String) -> Problem {
        var problem = Problem(.unauthorized, "dpop-required", detail)
        problem.headers[.wwwAuthenticate] = "DPoP algs=\"ES256\""
        return problem
    }

    /// The subject of the request's token and, when it carries a DPoP
    /// proof, the proof key; enforces the realm's DPoP policy, the token's
    /// binding (`cnf.jkt`) and the shared per-address and per-subject rate
    /// limits (counted only once the token is accepted).
    func caller(_ request: Request, _ context: KeyServerContext) async throws -> Caller {
        let (scheme, token) = try Self.credentials(request)
        guard !token.hasPrefix(ServerKeyStore.operatorPrefix) else {
            throw KeyServerError(.operatorTokenRefused, "an operator token cannot fetch keys; sign in as a user")
        }
        let signedIn = try await verifier.signIn(token)
        try await admitAddress(context)
        if let limit = limits.subject { try await store.admit("subject:\(realm)/\(signedIn.subject)", under: limit) }
        let proofs = request.headers[values: Self.dpopField]
        guard proofs.count <= 1 else { throw DPoPProof.refused("the request has more than one DPoP header") }
        guard let proof = proofs.first else {
            if dpop.required { throw Self.dpopRequired("this realm needs a DPoP proof with every key request") }
            if signedIn.boundKey != nil { throw Self.dpopRequired("the token is bound to a DPoP key: prove it") }
            if scheme == "dpop" { throw Self.dpopRequired("the DPoP scheme needs a DPoP proof") }
            return Caller(subject: signedIn.subject, proofKey: nil, proof: nil)
        }
        if signedIn.boundKey != nil && scheme != "dpop" {
            throw Self.dpopRequired("a token bound to a DPoP key is sent with the DPoP scheme, not Bearer")
        }
        let checked = try await checkProof(proof, request, token: token)
        let key = checked.thumbprint
        if let bound = signedIn.boundKey, !ConstantTime.equal(Array(bound.utf8), Array(key.utf8)) {
            throw DPoPProof.refused("the DPoP proof is not signed by the key the token is bound to")
        }
        return Caller(
            subject: signedIn.subject, proofKey: key,
            proof: ProofUse(hash: checked.replayHash, expires: dpop.spentUntil(issuedAt: checked.issuedAt)))
    }

    /// Checks a proof and its nonce; whether it was used before is checked
    /// where the key is released.
    func checkProof(_ proof: String, _ request: Request, token: Substring) async throws -> DPoPProof {
        let now = store.now()
        let path = request.uri.path
        // The URL the proof is for: the configured one, or without one a
        // loopback URL; never a name the request itself gives (its Host).
        let accepts: (String) -> Bool =
            dpop.publicURL.map { base in { $0 == base + path } } ?? { Self.isLoopbackURL($0, path: path) }
        let (checked, nonce) = try DPoPProof.check(
            proof, method: request.method.rawValue, accepts: accepts, accessToken: token, now: now,
            leeway: dpop.leeway, headers: proofHeaders)
        let nonces = try await store.dpopNonces()
        guard nonces.isValid(nonce, now: now) else {
            var problem = Problem(
                .unauthorized, "dpop-nonce-required", "the DPoP proof must carry the nonce in DPoP-Nonce")
            problem.headers[.wwwAuthenticate] = "DPoP error=\"use_dpop_nonce\", algs=\"ES256\""
            problem.headers[Self.dpopNonceField] = nonces.nonce(now: now)
            throw problem
        }
        return checked
    }

    /// Whether `url` is `http://` to a loopback host, any port, with `path`
    /// and nothing else.
    static func isLoopbackURL(_ url: String, path: String) -> Bool {
        guard let parts = URLComponents(string: url), parts.scheme == "http",
            Loopback.isHost(parts.host),
            parts.user == nil, parts.password == nil, parts.query == nil, parts.fragment == nil
        else { return false }
        return parts.percentEncodedPath == path
    }

    /// The scheme (lowercased: `bearer` or `dpop`) and the token.
    static func credentials(_ request: Request) throws -> (scheme: String, token: Substring) {
        guard let header = request.headers[.authorization] else {
            throw KeyServerError(.tokenMissing, "the request has no Authorization: Bearer or DPoP token")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        let scheme = parts.first?.lowercased() ?? ""
        guard parts.count == 2, scheme == "bearer" || scheme == "dpop", !parts[1].isEmpty else {
            throw KeyServerError(.tokenMissing, "the Authorization header is not a Bearer or DPoP token")
        }
        return (scheme, parts[1])
    }
}
#endif
