#if Server
import Coffer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import Tracing

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

/// The key routes' authenticator: the request's sign-in token checked by
/// the ``SignInVerifier``, then its DPoP proof by the realm's policy
/// (``DPoPCheck``) and the token's binding (`cnf.jkt`). A request it
/// refuses never reaches a route; the shared rate limits count what it
/// accepts (``SharedRateLimitMiddleware``, after it).
struct UserAuthenticator: AuthenticatorMiddleware {
    typealias Context = KeyServerContext
    let verifier: SignInVerifier
    let proofs: DPoPCheck

    /// The span `authenticate` (``ServerSpan``): the token and the proof
    /// checked, and nothing of either recorded.
    func authenticate(request: Request, context: KeyServerContext) async throws -> KeyServerIdentity? {
        try await ServerSpan.run("authenticate") { span in
            span.attributes["coffer.caller"] = "user"
            return KeyServerIdentity(kind: .user(try await caller(request)))
        }
    }

    func caller(_ request: Request) async throws -> Caller {
        let authorization = try Authorization(request, accepting: [.bearer, .dpop])
        let token = authorization.token
        guard !token.hasPrefix(ServerKeyStore.operatorPrefix) else {
            throw KeyServerError(.operatorTokenRefused, "an operator token cannot fetch keys; sign in as a user")
        }
        let signedIn = try await verifier.signIn(token)
        let headers = request.headers[values: DPoPCheck.proofField]
        guard headers.count <= 1 else { throw DPoPProof.refused("the request has more than one DPoP header") }
        guard let proof = headers.first else {
            if proofs.policy.required {
                throw DPoPCheck.required("this realm needs a DPoP proof with every key request")
            }
            if signedIn.boundKey != nil { throw DPoPCheck.required("the token is bound to a DPoP key: prove it") }
            if authorization.scheme == .dpop { throw DPoPCheck.required("the DPoP scheme needs a DPoP proof") }
            return Caller(subject: signedIn.subject, proofKey: nil, proof: nil)
        }
        if signedIn.boundKey != nil && authorization.scheme != .dpop {
            throw DPoPCheck.required("a token bound to a DPoP key is sent with the DPoP scheme, not Bearer")
        }
        let checked = try await proofs.check(proof, request, token: token)
        let key = checked.thumbprint
        if let bound = signedIn.boundKey, !ConstantTime.equal(Array(bound.utf8), Array(key.utf8)) {
            throw DPoPProof.refused("the DPoP proof is not signed by the key the token is bound to")
        }
        return Caller(
            subject: signedIn.subject, proofKey: key,
            proof: ProofUse(hash: checked.replayHash, expires: proofs.policy.spentUntil(issuedAt: checked.issuedAt)))
    }
}
#endif
