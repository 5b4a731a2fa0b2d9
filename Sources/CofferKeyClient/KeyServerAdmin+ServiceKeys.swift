import Coffer
import Crypto
import Foundation

extension KeyServerAdmin {
    /// `subject`'s key for `purpose` — the current one (made on first use),
    /// or `version` — released to a service that keeps the subject's data
    /// (scope `keys:release`; each release is in the server's audit chain).
    /// A CofferStore holds its tenants' keys this way
    /// (`KeyServerTenantKeyHolder`). A shredded subject is `key-shredded`
    /// (410).
    public func serviceKey(subject: String, purpose: String, version: Int? = nil) async throws -> ServerKey {
        if let version, version < 1 {
            throw KeyClientError(.invalidArgument, "a key's version is a whole number from 1")
        }
        let answer = try await requests.send(
            "/v1/service/keys", method: "POST", token: token,
            body: KeyServerBody.ServiceKey(subject: subject, purpose: purpose, version: version),
            answer: KeyServerBody.Key.self)
        // The id commits to the key (HMAC-SHA-256 under it, docs/key-server.md),
        // so a key that is not the one the id names is caught here.
        guard answer.purpose == purpose, answer.version >= 1, version.map({ $0 == answer.version }) ?? true,
            let bytes = Data(base64Encoded: answer.key), bytes.count == 32,
            answer.keyId == Self.keyID(of: bytes)
        else {
            throw KeyClientError(
                .malformedResponse, status: 200, "the server's answer is not a key of \(purpose) with its id")
        }
        return ServerKey(
            purpose: purpose, version: answer.version, keyID: answer.keyId, key: SymmetricKey(data: bytes),
            fromCache: false, cacheSeconds: answer.cacheSeconds)
    }

    /// A key's id as the server gives it: the first 8 bytes of
    /// HMAC-SHA-256(key, "coffer key server key id v2"), in hex.
    static func keyID(of key: Data) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("coffer key server key id v2".utf8), using: SymmetricKey(data: key))
        return Hex.encode(Array(mac.prefix(8)))
    }
}

extension KeyServerBody {
    /// `POST /v1/service/keys`'s body.
    struct ServiceKey: Codable, Sendable {
        var subject: String
        var purpose: String
        var version: Int?
    }
}
