#if Server
import CofferKeyServerCore
import Hummingbird

/// `/v1/admin`: operators rotate, retire and shred, each route needing an
/// operator token with its scope. They never return key bytes.
struct AdminController: AuthenticatedController {
    let store: ServerKeyStore
    let realm: String
    let authenticator: OperatorAuthenticator
    let limits: SharedRateLimitMiddleware

    var path: String { "/v1/admin" }

    var endpoints: [Endpoint] {
        [
            Endpoint(.post, "keys/rotate", rotate), Endpoint(.post, "keys/retire", retire),
            Endpoint(.post, "subjects/shred", shred), Endpoint(.post, "subjects/undo-shred", undoShred),
        ]
    }

    @Sendable func rotate(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let actor = try context.operatorActor(.rotate)
        let body = try await JSONBody.decode(RotateRequest.self, request)
        let key = try await store.rotate(
            try KeyName(realm: realm, subject: body.subject, device: body.device ?? "", purpose: body.purpose),
            by: actor)
        return JSONBody.response(KeyInfo(purpose: key.name.purpose, version: key.version, keyId: key.keyID))
    }

    @Sendable func retire(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let actor = try context.operatorActor(.retire)
        let body = try await JSONBody.decode(RetireRequest.self, request)
        let name = try KeyName(realm: realm, subject: body.subject, device: body.device ?? "", purpose: body.purpose)
        try await store.retire(name, below: body.minimumVersion, by: actor)
        return Response(status: .noContent)
    }

    @Sendable func shred(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let actor = try context.operatorActor(.shred)
        let body = try await JSONBody.decode(ShredRequest.self, request)
        _ = try KeyName(realm: realm, subject: body.subject, purpose: "-")
        let at = try await store.shred(
            realm: realm, subject: body.subject, after: body.undoWindowSeconds ?? 86400, by: actor)
        return JSONBody.response(ShredResponse(subject: body.subject, shredAt: ServerKeyStore.timestamp(at)))
    }

    @Sendable func undoShred(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let actor = try context.operatorActor(.shred)
        let body = try await JSONBody.decode(UndoShredRequest.self, request)
        _ = try KeyName(realm: realm, subject: body.subject, purpose: "-")
        try await store.undoShred(realm: realm, subject: body.subject, by: actor)
        return Response(status: .noContent)
    }
}
#endif
