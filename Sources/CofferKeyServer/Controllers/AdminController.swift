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
            Endpoint(.get, "keys", describe), Endpoint(.get, "subjects", subjects),
        ]
    }

    @Sendable func rotate(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let actor = try context.operatorActor(.rotate)
        let body = try await JSONBody.decode(RotateRequest.self, request)
        let key = try await store.rotate(
            try KeyName(realm: realm, subject: body.subject, device: body.device ?? "", purpose: body.purpose),
            creating: body.create ?? false, by: actor)
        context.logOperatorAction("rotate")
        return JSONBody.response(KeyInfo(purpose: key.name.purpose, version: key.version, keyId: key.keyID))
    }

    @Sendable func retire(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let actor = try context.operatorActor(.retire)
        let body = try await JSONBody.decode(RetireRequest.self, request)
        let name = try KeyName(realm: realm, subject: body.subject, device: body.device ?? "", purpose: body.purpose)
        try await store.retire(name, below: body.minimumVersion, by: actor)
        context.logOperatorAction("retire")
        return Response(status: .noContent)
    }

    @Sendable func shred(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let actor = try context.operatorActor(.shred)
        let body = try await JSONBody.decode(ShredRequest.self, request)
        _ = try KeyName(realm: realm, subject: body.subject, purpose: "-")
        let (window, creating) = (body.undoWindowSeconds ?? 86400, body.create ?? false)
        if body.dryRun == true {
            let preview = try await store.shredPreview(
                realm: realm, subject: body.subject, after: window, creating: creating)
            return JSONBody.response(
                ShredResponse(
                    subject: body.subject, shredAt: ServerKeyStore.timestamp(preview.shredAt), dryRun: true,
                    storedVersions: preview.keys.storedVersions))
        }
        let at = try await store.shred(
            realm: realm, subject: body.subject, after: window, creating: creating, by: actor)
        context.logOperatorAction("shred")
        return JSONBody.response(
            ShredResponse(
                subject: body.subject, shredAt: ServerKeyStore.timestamp(at), dryRun: nil, storedVersions: nil))
    }

    /// `GET keys?subject=S`: what the server holds for S (scope keys:read).
    @Sendable func describe(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        _ = try context.operatorActor(.read)
        try Self.refuseUnknown(request, allowing: ["subject"])
        guard let subject = request.uri.queryParameters["subject"].map(String.init) else {
            throw KeyServerError(.badRequest, "name the subject: GET /v1/admin/keys?subject=S")
        }
        _ = try KeyName(realm: realm, subject: subject, purpose: "-")
        return JSONBody.response(SubjectKeysResponse(try await store.describe(realm: realm, subject: subject)))
    }

    /// `GET subjects?after=S&limit=N`: the realm's subjects, a page at a time (scope keys:read).
    @Sendable func subjects(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        _ = try context.operatorActor(.read)
        try Self.refuseUnknown(request, allowing: ["after", "limit"])
        let query = request.uri.queryParameters
        let after = query["after"].map(String.init) ?? ""
        guard let limit = query["limit"].map({ Int($0) }) ?? 100 else {
            throw KeyServerError(.badRequest, "limit is a whole number from 1 to 1,000")
        }
        let page = try await store.subjects(realm: realm, after: after, limit: limit)
        return JSONBody.response(SubjectsResponse(subjects: page, next: page.count == limit ? page.last : nil))
    }

    /// A query parameter the route does not take (a misspelt `limt=5`)
    /// is refused, as a body's unknown member is, rather than ignored; so
    /// is one given twice.
    static func refuseUnknown(_ request: Request, allowing names: Set<String>) throws {
        var seen: Set<String> = []
        for (name, _) in request.uri.queryParameters {
            let name = String(name)
            guard names.contains(name) else {
                throw KeyServerError(
                    .badRequest,
                    "\(name) is not a query parameter of this route (it takes \(names.sorted().joined(separator: ", ")))"
                )
            }
            guard seen.insert(name).inserted else { throw KeyServerError(.badRequest, "\(name) is given twice") }
        }
    }

    @Sendable func undoShred(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let actor = try context.operatorActor(.shred)
        let body = try await JSONBody.decode(UndoShredRequest.self, request)
        _ = try KeyName(realm: realm, subject: body.subject, purpose: "-")
        try await store.undoShred(realm: realm, subject: body.subject, by: actor)
        context.logOperatorAction("undo-shred")
        return Response(status: .noContent)
    }
}
#endif
