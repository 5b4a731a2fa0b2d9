#if Server
import Coffer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird

/// What checks a request's DPoP proof and owns the state for it: the
/// realm's policy, the proof headers seen before and the nonces every
/// replica accepts. Whether a proof was used before is checked where the
/// key is released, in the release's transaction.
struct DPoPCheck: Sendable {
    let policy: DPoPPolicy
    let headers = DPoPHeaders()
    let nonces: DPoPNonceSource
    /// Seconds since 1970 (the store's clock, which tests move).
    let now: @Sendable () -> Int64

    init(policy: DPoPPolicy, store: ServerKeyStore) {
        self.policy = policy
        self.nonces = DPoPNonceSource(store: store)
        self.now = { store.now() }
    }

    static var proofField: HTTPField.Name { HTTPField.Name("DPoP")! }
    static var nonceField: HTTPField.Name { HTTPField.Name("DPoP-Nonce")! }

    static func required(_ detail: String) -> Problem {
        var problem = Problem(.unauthorized, "dpop-required", detail)
        problem.headers[.wwwAuthenticate] = "DPoP algs=\"ES256\""
        return problem
    }

    /// Checks a proof and its nonce.
    func check(_ proof: String, _ request: Request, token: Substring) async throws -> DPoPProof {
        let now = now()
        let path = request.uri.path
        // The URL the proof is for: the configured one, or without one a
        // loopback URL; never a name the request itself gives (its Host).
        let accepts: (String) -> Bool =
            policy.publicURL.map { base in { $0 == base + path } } ?? { Self.isLoopbackURL($0, path: path) }
        let (checked, nonce) = try DPoPProof.check(
            proof, method: request.method.rawValue, accepts: accepts, accessToken: token, now: now,
            leeway: policy.leeway, headers: headers)
        let nonces = try await nonces.nonces()
        guard nonces.isValid(nonce, now: now) else {
            var problem = Problem(
                .unauthorized, "dpop-nonce-required", "the DPoP proof must carry the nonce in DPoP-Nonce")
            problem.headers[.wwwAuthenticate] = "DPoP error=\"use_dpop_nonce\", algs=\"ES256\""
            problem.headers[Self.nonceField] = nonces.nonce(now: now)
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
}
#endif
