import Coffer
import Foundation

extension KeyServerAdmin {
    /// The state anchored for the store `storeID` (32 hex digits) in the
    /// token's realm, or nil when none is (scope `stores:anchor`).
    public func storeAnchor(store storeID: String) async throws -> StoreAnchorState? {
        try await requests.storeAnchor("/v1/stores/\(try Self.checked(storeID))/anchor", token: token)
    }

    /// Anchors `state` for the store when it extends the anchored one, and
    /// returns the state anchored afterwards; an older or forked state is
    /// `store-anchor-not-newer` (409) unless `accept` (a restore accepted
    /// on purpose, audited as such).
    @discardableResult
    public func anchorStore(store storeID: String, state: StoreAnchorState, accept: Bool = false) async throws
        -> StoreAnchorState
    {
        try await requests.anchorStore(
            "/v1/stores/\(try Self.checked(storeID))/anchor", token: token, state: state, accept: accept)
    }

    /// `storeID` when it is 32 lowercase hex digits (it goes into a path).
    static func checked(_ storeID: String) throws -> String {
        guard storeID.utf8.count == 32, storeID.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { throw KeyClientError.invalidArgument("a store id is 32 lowercase hex digits") }
        return storeID
    }
}

extension KeyServerClient {
    /// The state anchored for the signed-in user's store `storeID` (an
    /// app's own store, kept under the user), or nil when none is.
    public func storeAnchor(store storeID: String) async throws -> StoreAnchorState? {
        let path = "/v1/me/stores/\(try KeyServerAdmin.checked(storeID))/anchor"
        return try await requests.storeAnchor(path, token: try await token())
    }

    /// Anchors `state` for the signed-in user's store, as
    /// ``KeyServerAdmin/anchorStore(store:state:accept:)`` does for an operator.
    @discardableResult
    public func anchorStore(store storeID: String, state: StoreAnchorState, accept: Bool = false) async throws
        -> StoreAnchorState
    {
        let path = "/v1/me/stores/\(try KeyServerAdmin.checked(storeID))/anchor"
        return try await requests.anchorStore(path, token: try await token(), state: state, accept: accept)
    }
}

/// A store anchor's two calls, the same for an operator's store and a
/// signed-in user's own. The state in an answer is checked as one read
/// from any other anchor is (``StoreAnchorState/check()``).
extension KeyServerCall {
    func storeAnchor(_ path: String, token: String) async throws -> StoreAnchorState? {
        do {
            return try await checked(send(path, method: "GET", token: token, answer: StoreAnchorState.self))
        } catch let error as KeyClientError where error.code == .init("store-anchor-not-found") {
            return nil
        }
    }

    func anchorStore(_ path: String, token: String, state: StoreAnchorState, accept: Bool) async throws
        -> StoreAnchorState
    {
        try await checked(
            send(
                path, method: "PUT", token: token,
                body: Publish(
                    epoch: state.epoch, sequences: state.sequences, digest: state.digest, accept: accept ? true : nil),
                answer: StoreAnchorState.self))
    }

    private func checked(_ state: StoreAnchorState) throws -> StoreAnchorState {
        do { try state.check() } catch {
            throw KeyClientError(
                .malformedResponse, status: 200, "the server's store anchor has a bad digest or shard count")
        }
        return state
    }

    struct Publish: Codable, Sendable {
        var epoch: UInt64
        var sequences: [String: [UInt64]]
        var digest: String
        var accept: Bool?
    }
}
