#if Server
import CofferKeyServerCore
import Hummingbird

/// `/v1/keys`: a signed-in user's keys, current or by version, one or a
/// batch. Behind the user authenticator and the shared rate limits.
struct KeyController: AuthenticatedController {
    let store: ServerKeyStore
    let realm: String
    let clientCacheSeconds: Int64
    let authenticator: UserAuthenticator
    let limits: SharedRateLimitMiddleware
    static let maxBatch = 32

    var path: String { "/v1/keys" }

    var endpoints: [Endpoint] {
        [
            Endpoint(.post, ":purpose", current),
            Endpoint(.get, ":purpose/versions/:version", version),
            Endpoint(.post, "", batch),
        ]
    }

    @Sendable func current(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let caller = try context.caller()
        let body = try await JSONBody.decode(KeyRequest.self, request, emptyAs: KeyRequest(device: nil))
        let key = try await store.current(
            try KeyName(
                realm: realm, subject: caller.subject, device: try caller.device(body.device),
                purpose: JSONBody.parameter("purpose", context)),
            proof: caller.proof, counts: context.pendingCounts?.take() ?? [])
        return KeyResponse.body([KeyResponse(key, cacheSeconds: clientCacheSeconds)], batch: false)
    }

    @Sendable func version(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let caller = try context.caller()
        guard let version = Int(try JSONBody.parameter("version", context)), version >= 1 else {
            throw KeyServerError(.invalidVersion, "a version is a whole number from 1")
        }
        let name = try KeyName(
            realm: realm, subject: caller.subject,
            device: try caller.device(request.uri.queryParameters.get("device").map { String($0) }),
            purpose: JSONBody.parameter("purpose", context))
        let key = try await store.version(
            version, of: name, proof: caller.proof, counts: context.pendingCounts?.take() ?? [])
        return KeyResponse.body([KeyResponse(key, cacheSeconds: clientCacheSeconds)], batch: false)
    }

    @Sendable func batch(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let caller = try context.caller()
        let body = try await JSONBody.decode(BatchRequest.self, request)
        guard (1...Self.maxBatch).contains(body.purposes.count), Set(body.purposes).count == body.purposes.count
        else {
            throw KeyServerError(.invalidBatch, "a batch names 1 to \(Self.maxBatch) different purposes")
        }
        var keys: [KeyResponse] = []
        for purpose in body.purposes {
            let name = try KeyName(
                realm: realm, subject: caller.subject, device: try caller.device(body.device), purpose: purpose)
            // The proof is spent, and the request counted, with the first key.
            let first = keys.isEmpty
            keys.append(
                KeyResponse(
                    try await store.current(
                        name, proof: first ? caller.proof : nil,
                        counts: first ? context.pendingCounts?.take() ?? [] : []),
                    cacheSeconds: clientCacheSeconds))
        }
        return KeyResponse.body(keys, batch: true)
    }
}
#endif
