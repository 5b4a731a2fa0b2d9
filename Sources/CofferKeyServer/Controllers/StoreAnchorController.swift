#if Server
import Coffer
import CofferKeyServerCore
import Hummingbird

/// The anchored state of a CofferStore (docs/store.md, "Anchors"), read
/// and moved forward; a state that does not extend the anchored one is
/// refused (409). Two routes share it, differing only in who calls and
/// whose anchor it is:
/// - `/v1/stores/:store/anchor` (``fleet(store:realm:authenticator:limits:)``):
///   operators of this realm holding the `stores:anchor` scope — a fleet's
///   app servers — who may also accept an older state on purpose
///   (`"accept": true`, audited as such);
/// - `/v1/me/stores/:store/anchor` (``user(store:realm:authenticator:limits:)``):
///   a store a signed-in user keeps (an app's own store on a device), under
///   that user: no other user reads or moves it, and only forward.
struct StoreAnchorController<Authenticator: RouterMiddleware<KeyServerContext>>: AuthenticatedController {
    let store: ServerKeyStore
    let realm: String
    let authenticator: Authenticator
    let limits: SharedRateLimitMiddleware
    let path: String
    /// Who calls: the anchor's owner (nil for the realm's fleet), the actor
    /// the audit names, and whether an older state may be accepted.
    let caller: @Sendable (KeyServerContext) throws -> Caller

    struct Caller {
        var owner: String?
        var actor: String
        var mayAccept: Bool
    }

    var endpoints: [Endpoint] {
        [Endpoint(.get, ":store/anchor", read), Endpoint(.put, ":store/anchor", publish)]
    }

    @Sendable func read(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let caller = try caller(context)
        let id = try JSONBody.parameter("store", context)
        guard let state = try await store.storeAnchor(realm: realm, store: id, owner: caller.owner) else {
            throw KeyServerError(.storeAnchorNotFound, "no state is anchored for this store")
        }
        return JSONBody.response(state, private: true)
    }

    @Sendable func publish(_ request: Request, _ context: KeyServerContext) async throws -> Response {
        let caller = try caller(context)
        let id = try JSONBody.parameter("store", context)
        let body = try await JSONBody.decode(StoreAnchorRequest.self, request)
        let accepting = body.accept ?? false
        guard !accepting || caller.mayAccept else {
            throw KeyServerError(
                .scopeMissing, "accepting an older state needs an operator token of scope stores:anchor")
        }
        let stored = try await store.anchorStore(
            realm: realm, store: id, owner: caller.owner, state: try body.state(), accepting: accepting,
            by: caller.actor)
        return JSONBody.response(stored, private: true)
    }
}

extension StoreAnchorController where Authenticator == OperatorAuthenticator {
    static func fleet(
        store: ServerKeyStore, realm: String, authenticator: OperatorAuthenticator, limits: SharedRateLimitMiddleware
    ) -> Self {
        .init(store: store, realm: realm, authenticator: authenticator, limits: limits, path: "/v1/stores") {
            Caller(owner: nil, actor: try $0.operatorActor(.anchor), mayAccept: true)
        }
    }
}

extension StoreAnchorController where Authenticator == UserAuthenticator {
    static func user(
        store: ServerKeyStore, realm: String, authenticator: UserAuthenticator, limits: SharedRateLimitMiddleware
    ) -> Self {
        .init(store: store, realm: realm, authenticator: authenticator, limits: limits, path: "/v1/me/stores") {
            // Taking an older state back is an operator's act: a sign-in
            // token (and a DPoP proof, which this route does not spend)
            // could be replayed to undo the user's anchor.
            Caller(owner: try $0.caller().subject, actor: "user", mayAccept: false)
        }
    }
}

/// A store's state to anchor: ``StoreAnchorState``'s members, and
/// `accept` to replace an anchored state that is newer.
struct StoreAnchorRequest: RequestBody {
    static let members: Set<String> = ["epoch", "sequences", "digest", "accept"]
    let epoch: UInt64
    let sequences: [String: [UInt64]]
    let digest: String
    let accept: Bool?

    enum CodingKeys: String, CodingKey { case epoch, sequences, digest, accept }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        epoch = try container.decode(WholeNumber.self, forKey: .epoch).value
        sequences = try container.decode([String: [WholeNumber]].self, forKey: .sequences).mapValues { $0.map(\.value) }
        digest = try container.decode(String.self, forKey: .digest)
        accept = try container.decodeIfPresent(Bool.self, forKey: .accept)
    }

    /// A whole number from 0, written as JSON writes numbers: `7` or `7.0`
    /// (JSON Schema's integer takes both).
    struct WholeNumber: Decodable {
        let value: UInt64
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(UInt64.self) {
                value = number
                return
            }
            let number = try container.decode(Double.self)
            guard number >= 0, number < 9_007_199_254_740_992, number.rounded() == number else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a whole number from 0")
            }
            value = UInt64(number)
        }
    }

    /// The state, its digest, tables and shard counts checked.
    func state() throws -> StoreAnchorState {
        let state = StoreAnchorState(epoch: epoch, sequences: sequences, digest: digest)
        // JSON's exact integers (docs/openapi.yaml says so too).
        let largest: UInt64 = 9_007_199_254_740_991
        guard epoch <= largest, sequences.values.allSatisfy({ $0.allSatisfy { $0 <= largest } }) else {
            throw KeyServerError(.invalidStoreAnchor, "a store state's numbers are at most 2^53 - 1")
        }
        guard sequences.count <= 256,
            sequences.keys.allSatisfy({ name in
                !name.isEmpty && name.utf8.count <= 63 && name.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7f }
            })
        else {
            throw KeyServerError(.invalidStoreAnchor, "a store state names at most 256 tables, each a plain name")
        }
        do { return try StoreAnchorState(json: try state.json()) } catch {
            throw KeyServerError(
                .invalidStoreAnchor, "a store state has a 64-hex-digit digest and 16 sequence numbers per table")
        }
    }
}
#endif
