#if Server
import Coffer
import Crypto
import Foundation

/// What an operator token allows.
public struct OperatorScope: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    /// Add a version to a subject's key.
    public static let rotate = OperatorScope("keys:rotate")
    /// Set a key's minimum version.
    public static let retire = OperatorScope("keys:retire")
    /// Schedule and undo the shredding of a subject.
    public static let shred = OperatorScope("subjects:shred")
    /// Read `GET /metrics` (a Prometheus scraper's token).
    public static let metrics = OperatorScope("metrics:read")
    /// Read and publish the anchored states of CofferStores (a fleet's app servers).
    public static let anchor = OperatorScope("stores:anchor")
    /// Read subjects and their keys' versions and shred states (never a key).
    public static let read = OperatorScope("keys:read")
    /// Fetch the keys of this realm's subjects (`POST /v1/service/keys`):
    /// for a service that keeps many subjects' data under their keys — a
    /// CofferStore whose tenants' keys are held here (docs/store.md,
    /// "Tenants"). The one scope whose calls return key bytes; each release
    /// is written to the audit chain naming the operator, and it is given
    /// only when asked for by name (never by ``all``).
    public static let release = OperatorScope("keys:release")
    /// The scopes an operator made without naming any gets: every one that
    /// returns no key.
    public static let all: [OperatorScope] = [.rotate, .retire, .shred, .metrics, .anchor, .read]
    /// Every scope a token may hold.
    public static let known: [OperatorScope] = all + [.release]
}

/// An operator as listed (never its token).
public struct OperatorInfo: Sendable, Equatable {
    public let name: String
    public let scopes: [OperatorScope]
    /// The realm whose servers accept the token; nil for an operator made
    /// before operators had realms, which no server accepts.
    public let realm: String?
    public let created: Int64
    /// When the token stops being accepted (seconds since 1970); nil: never.
    public let expires: Int64?

    public init(name: String, scopes: [OperatorScope], realm: String?, created: Int64, expires: Int64? = nil) {
        self.name = name
        self.scopes = scopes
        self.realm = realm
        self.created = created
        self.expires = expires
    }

    /// Whether the token is past its expiry at `now`.
    public func expired(at now: Int64) -> Bool { expires.map { now >= $0 } ?? false }
}

/// Operator tokens: `cofop_` and 43 characters of base64url (32 random
/// bytes), shown once when made and stored only as their SHA-256. A token
/// is found by its hash; a hash of 256 random bits reveals nothing that a
/// timing difference in the lookup could leak.
extension ServerKeyStore {
    package static let operatorPrefix = "cofop_"

    /// Makes an operator token for the servers of `realm`; returns it (the
    /// only time it exists outside the caller). Names are unique across
    /// realms. A server accepts only its own realm's operators, so servers
    /// of several realms may share one database (security review 3, G14).
    ///
    /// `expiresIn`: seconds (60 to 10 years) after which no server accepts
    /// the token (`401 operator-token-expired`); nil, the default, never.
    public func addOperator(
        name: String, scopes: [OperatorScope], realm: String = "default", expiresIn: Int64? = nil,
        by actor: String = "console"
    ) async throws -> String {
        if let expiresIn, !(60...Self.longestOperatorLife).contains(expiresIn) {
            throw KeyServerError(.invalidOperatorExpiry, "an operator token expires 60 s to 10 years after it is made")
        }
        guard KeyName.isToken(name, lowercaseOnly: false, range: 1...64) else {
            throw KeyServerError(.invalidOperatorName, "an operator's name is 1–64 of A-Z, a-z, 0-9, '.', '_', '-'")
        }
        let known = Set(OperatorScope.known)
        guard !scopes.isEmpty, scopes.allSatisfy(known.contains) else {
            throw KeyServerError(
                .invalidScope, "scopes are one or more of \(OperatorScope.known.map(\.name).joined(separator: ", "))")
        }
        _ = try KeyName(realm: realm, subject: "-", purpose: "-")
        let random = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        let token = Self.operatorPrefix + Base64URL.encode(Array(random))
        let created = now()
        let expires = expiresIn.map { created + $0 }
        try await rows.addOperator(
            hash: Self.hash(token), name: name, scopes: scopes.map(\.name).sorted().joined(separator: " "),
            realm: realm, created: created, expires: expires,
            audit: {
                var record = AuditEntry.Record(actor: actor, action: "operator-add")
                // Server-wide, as every operator change (realm and subject
                // empty): the realm the token is for is in the detail.
                record.detail =
                    "\(name) for \(realm): \(scopes.map(\.name).sorted().joined(separator: " "))"
                    + (expires.map { ", expires \(Self.timestamp($0))" } ?? "")
                return record
            }())
        return token
    }

    /// The operator a token belongs to, or nil.
    public func operatorFor(token: String) async throws -> OperatorInfo? {
        guard token.hasPrefix(Self.operatorPrefix), token.utf8.count == Self.operatorPrefix.utf8.count + 43 else {
            return nil
        }
        let hash = Self.hash(token)
        return try await rows.operatorInfo(hash: hash)
    }

    public func operators() async throws -> [OperatorInfo] {
        try await rows.operators()
    }

    /// Removes an operator; false when there was none of that name.
    @discardableResult
    public func removeOperator(name: String, by actor: String = "console") async throws -> Bool {
        var record = AuditEntry.Record(actor: actor, action: "operator-remove")
        record.detail = name
        return try await rows.removeOperator(name: name, now: now(), audit: record)
    }

    static func hash(_ token: String) -> Data { Data(SHA256.hash(data: Data(token.utf8))) }

    /// Ten years, in seconds: the longest an operator token may live.
    static let longestOperatorLife: Int64 = 10 * 366 * 86400
}

extension OperatorInfo {
    init(name: String, scopes: String, realm: String?, created: Int64, expires: Int64?) {
        self.init(
            name: name, scopes: scopes.split(separator: " ").map { OperatorScope(String($0)) }, realm: realm,
            created: created, expires: expires)
    }
}
#endif
