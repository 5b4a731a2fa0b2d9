import Foundation

/// A CofferStore's state as a key server anchors it (docs/store.md,
/// "Anchors"; `CofferStore.StoreAnchorState` is the same JSON).
public struct AnchoredStoreState: Sendable, Hashable, Codable {
    public var epoch: UInt64
    public var sequences: [String: [UInt64]]
    public var digest: String

    public init(epoch: UInt64, sequences: [String: [UInt64]], digest: String) {
        self.epoch = epoch
        self.sequences = sequences
        self.digest = digest
    }
}

extension KeyServerAdmin {
    /// The state anchored for the store `storeID` (32 hex digits) in the
    /// token's realm, or nil when none is (scope `stores:anchor`).
    public func storeAnchor(store storeID: String) async throws -> AnchoredStoreState? {
        try Self.checkStoreID(storeID)
        do {
            return try await requests.send(
                "/v1/stores/\(storeID)/anchor", method: "GET", token: token, answer: AnchoredStoreState.self)
        } catch let error as KeyClientError where error.code == .init("store-anchor-not-found") {
            return nil
        }
    }

    /// Anchors `state` for the store when it extends the anchored one, and
    /// returns the state anchored afterwards; an older or forked state is
    /// `store-anchor-not-newer` (409) unless `accept` (a restore accepted
    /// on purpose, audited as such).
    @discardableResult
    public func anchorStore(store storeID: String, state: AnchoredStoreState, accept: Bool = false) async throws
        -> AnchoredStoreState
    {
        try Self.checkStoreID(storeID)
        return try await requests.send(
            "/v1/stores/\(storeID)/anchor", method: "PUT", token: token,
            body: Publish(
                epoch: state.epoch, sequences: state.sequences, digest: state.digest, accept: accept ? true : nil),
            answer: AnchoredStoreState.self)
    }

    static func checkStoreID(_ storeID: String) throws {
        guard storeID.utf8.count == 32, storeID.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { throw KeyClientError.invalidArgument("a store id is 32 lowercase hex digits") }
    }

    struct Publish: Codable, Sendable {
        var epoch: UInt64
        var sequences: [String: [UInt64]]
        var digest: String
        var accept: Bool?
    }
}

extension KeyServerClient {
    /// The state anchored for the signed-in user's store `storeID` (an
    /// app's own store, kept under the user), or nil when none is.
    public func storeAnchor(store storeID: String) async throws -> AnchoredStoreState? {
        try KeyServerAdmin.checkStoreID(storeID)
        do {
            return try await requests.send(
                "/v1/me/stores/\(storeID)/anchor", method: "GET", token: try await token(),
                answer: AnchoredStoreState.self)
        } catch let error as KeyClientError where error.code == .init("store-anchor-not-found") {
            return nil
        }
    }

    /// Anchors `state` for the signed-in user's store, as
    /// ``KeyServerAdmin/anchorStore(store:state:accept:)`` does for an operator.
    @discardableResult
    public func anchorStore(store storeID: String, state: AnchoredStoreState, accept: Bool = false) async throws
        -> AnchoredStoreState
    {
        try KeyServerAdmin.checkStoreID(storeID)
        return try await requests.send(
            "/v1/me/stores/\(storeID)/anchor", method: "PUT", token: try await token(),
            body: KeyServerAdmin.Publish(
                epoch: state.epoch, sequences: state.sequences, digest: state.digest, accept: accept ? true : nil),
            answer: AnchoredStoreState.self)
    }
}
