#if Server
import Coffer
import CofferStore
import Crypto
import Foundation

/// The anchored states of CofferStores (docs/store.md, "Anchors"): per
/// realm and store id — for a store a signed-in user keeps, per realm,
/// user and store id — only ever moved forward, each move written to the
/// audit chain.
extension ServerKeyStore {
    /// The state anchored for `store` in `realm` (of the user `owner`, when
    /// given), or nil.
    public func storeAnchor(realm: String, store: String, owner: String? = nil) async throws -> StoreAnchorState? {
        try Self.checkStoreID(store)
        return try await rows.storeAnchor(realm: realm, store: Self.anchorKey(store, owner: owner)).map {
            try StoreAnchorState(json: $0)
        }
    }

    /// Where a store's anchor is kept: its id, or for a user's store
    /// `user:`, 32 hex digits of SHA-256 of the subject, `:` and its id.
    static func anchorKey(_ store: String, owner: String?) -> String {
        guard let owner else { return store }
        return "user:" + Hex.encode(Array(SHA256.hash(data: Data(owner.utf8))).prefix(16)) + ":" + store
    }

    /// Anchors `state` for `store` in `realm` when it extends the anchored
    /// one (the same state again changes nothing); an older or forked state
    /// is `storeAnchorNotNewer` (409). With `accepting`, `state` replaces
    /// whatever is anchored (a restore accepted on purpose). Returns the
    /// state anchored afterwards.
    public func anchorStore(
        realm: String, store: String, owner: String? = nil, state: StoreAnchorState, accepting: Bool = false,
        by actor: String
    ) async throws -> StoreAnchorState {
        try Self.checkStoreID(store)
        let json = try state.json()
        let stored = try await rows.updateStoreAnchor(
            realm: realm, store: Self.anchorKey(store, owner: owner), now: now(),
            audit: AuditEntry.Record(
                actor: actor, action: accepting ? "store-anchor-accept" : "store-anchor", realm: realm,
                subject: owner ?? "", device: "", purpose: "store:" + store, version: Int64(clamping: state.epoch),
                detail: "\(state)")
        ) { stored in
            guard let stored, !accepting else { return json }
            let anchored: StoreAnchorState
            do { anchored = try StoreAnchorState(json: stored) } catch { return json }
            switch state.compared(to: anchored) {
            case .same: return nil
            case .newer: return json
            case .older, .forked:
                throw KeyServerError(
                    .storeAnchorNotNewer,
                    "the state does not extend the one anchored (\(anchored)): \(state.compared(to: anchored) == .older ? "it is older" : "it is another history")"
                )
            }
        }
        return try StoreAnchorState(json: stored)
    }

    static func checkStoreID(_ store: String) throws {
        guard store.utf8.count == 32, store.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { throw KeyServerError(.invalidStoreAnchor, "a store id is 32 lowercase hex digits") }
    }
}
#endif
