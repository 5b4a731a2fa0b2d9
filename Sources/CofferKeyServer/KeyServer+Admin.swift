import Crypto
import Foundation
import HTTPTypes
import Hummingbird

/// Operator routes under `/v1/admin/…`, each needing an operator token
/// with its scope. They never return key bytes.
extension KeyServer {
    func addAdminRoutes(_ router: Router<KeyServerContext>) {
        router.post("/v1/admin/keys/rotate") { request, _ in
            let actor = try await authorize(request, .rotate)
            let body = try await Self.decode(RotateRequest.self, request)
            let key = try await store.rotate(
                try KeyName(realm: realm, subject: body.subject, device: body.device ?? "", purpose: body.purpose),
                by: actor)
            return Self.json(KeyInfo(purpose: key.name.purpose, version: key.version, keyId: key.keyID))
        }
        router.post("/v1/admin/keys/retire") { request, _ in
            let actor = try await authorize(request, .retire)
            let body = try await Self.decode(RetireRequest.self, request)
            let name = try KeyName(
                realm: realm, subject: body.subject, device: body.device ?? "", purpose: body.purpose)
            try await store.retire(name, below: body.minimumVersion, by: actor)
            return Response(status: .noContent)
        }
        router.post("/v1/admin/subjects/shred") { request, _ in
            let actor = try await authorize(request, .shred)
            let body = try await Self.decode(ShredRequest.self, request)
            _ = try KeyName(realm: realm, subject: body.subject, purpose: "-")
            let at = try await store.shred(
                realm: realm, subject: body.subject, after: body.undoWindowSeconds ?? 86400, by: actor)
            return Self.json(ShredResponse(subject: body.subject, shredAt: ServerKeyStore.timestamp(at)))
        }
        router.post("/v1/admin/subjects/undo-shred") { request, _ in
            let actor = try await authorize(request, .shred)
            let body = try await Self.decode(UndoShredRequest.self, request)
            _ = try KeyName(realm: realm, subject: body.subject, purpose: "-")
            try await store.undoShred(realm: realm, subject: body.subject, by: actor)
            return Response(status: .noContent)
        }
    }

    /// The request's operator token must be known and hold `scope`;
    /// returns the operator as the audit log names them.
    @discardableResult
    func authorize(_ request: Request, _ scope: OperatorScope) async throws -> String {
        guard let info = try await store.operatorFor(token: String(try Self.bearer(request))) else {
            throw Problem.unauthorized("operator-token-invalid", "the operator token is not known")
        }
        guard info.scopes.contains(scope) else {
            throw Problem(.forbidden, "scope-missing", "this operator token lacks the \(scope) scope")
        }
        return "operator:" + info.name
    }
}

// MARK: bodies (docs/openapi.yaml)

/// A request body: `members` are the only ones it may have.
protocol RequestBody: Decodable {
    static var members: Set<String> { get }
}

struct Health: Codable { let status: String }
struct KeyRequest: RequestBody {
    static let members: Set<String> = ["device"]
    let device: String?
}

struct BatchRequest: RequestBody {
    static let members: Set<String> = ["purposes", "device"]
    let purposes: [String]
    let device: String?
}

struct KeyResponse: Codable {
    let purpose: String
    let version: Int
    let keyId: String
    /// The key, base64.
    let key: String
    let device: String?

    init(_ released: ReleasedKey) {
        purpose = released.name.purpose
        version = released.version
        keyId = released.keyID
        key = released.key.withUnsafeBytes { Data($0).base64EncodedString() }
        device = released.name.device.isEmpty ? nil : released.name.device
    }
}

struct BatchResponse: Codable { let keys: [KeyResponse] }
struct KeyInfo: Codable {
    let purpose: String
    let version: Int
    let keyId: String
}

struct RotateRequest: RequestBody {
    static let members: Set<String> = ["subject", "purpose", "device"]
    let subject: String
    let purpose: String
    let device: String?
}

struct RetireRequest: RequestBody {
    static let members: Set<String> = ["subject", "purpose", "device", "minimumVersion"]
    let subject: String
    let purpose: String
    let device: String?
    let minimumVersion: Int
}

struct DevTokenRequest: RequestBody {
    static let members: Set<String> = ["subject"]
    let subject: String
}

struct UndoShredRequest: RequestBody {
    static let members: Set<String> = ["subject"]
    let subject: String
}

struct ShredRequest: RequestBody {
    static let members: Set<String> = ["subject", "undoWindowSeconds"]
    let subject: String
    let undoWindowSeconds: Int64?
}

struct ShredResponse: Codable {
    let subject: String
    let shredAt: String
}
