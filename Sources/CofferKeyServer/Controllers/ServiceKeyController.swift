#if Server
import CofferKeyServerCore
import Hummingbird

/// `/v1/service/keys`: a subject's key released to a service that keeps
/// that subject's data — a CofferStore whose tenants' keys this server
/// holds (docs/store.md, "Tenants") — with an operator token of this
/// realm holding the `keys:release` scope, which an operator gets only by
/// naming it. The key is the one the subject itself would be given
/// (created on first use); each release is in the audit chain with the
/// operator as its actor, and counts against the per-address rate limit
/// in the release's own transaction, as a signed-in user's does (the
/// per-subject limit counts signed-in users). A shredded
/// subject's key answers `410 key-shredded` here too: that is what makes a
/// shred reach every backup of the service's database.
struct ServiceKeyController: AuthenticatedController {
    let store: ServerKeyStore
    let realm: String
    let authenticator: OperatorAuthenticator
    let limits: SharedRateLimitMiddleware

    var path: String { "/v1/service/keys" }

    var endpoints: [Endpoint] { [Endpoint(.post, "", release)] }

    @Sendable func release(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let actor = try context.operatorActor(.release)
        let body = try await JSONBody.decode(ServiceKeyRequest.self, request)
        let name = try KeyName(realm: realm, subject: body.subject, purpose: body.purpose)
        let counts = context.pendingCounts?.take() ?? []
        let key: ReleasedKey
        if let version = body.version {
            guard version >= 1 else {
                throw KeyServerError(.invalidVersion, "a version is a whole number from 1")
            }
            key = try await store.version(version, of: name, proof: nil, counts: counts, releasedTo: actor)
        } else {
            key = try await store.current(name, proof: nil, counts: counts, releasedTo: actor)
        }
        // No cache time: a service asks again for each tenant it opens, so
        // that a shred is seen at its next opening.
        return KeyResponse.body([KeyResponse(key, cacheSeconds: 0)], batch: false)
    }
}

/// A service's key request: whose key, for which purpose, and a version
/// (the current one when absent).
struct ServiceKeyRequest: RequestBody {
    static let members: Set<String> = ["subject", "purpose", "version"]
    let subject: String
    let purpose: String
    let version: Int?
}
#endif
