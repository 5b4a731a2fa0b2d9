import Coffer
import CofferKeyClient
import Foundation

/// A key server as a store's anchor (docs/store.md, "Anchors"): every
/// process of a fleet, on any machine, checks against and publishes to the
/// same state, kept per realm and store id, moved only forward, each move
/// in the server's audit chain. A fleet's processes hold an operator token
/// of the `stores:anchor` scope of the server's realm; an app whose store
/// is its user's anchors it under that user, through the user's
/// `KeyServerClient` (``init(client:)``).
///
/// ```swift
/// let anchor = try KeyServerStoreAnchor(
///     server: URL(string: "https://keys.example.com")!, operatorToken: token)
/// try store.keepAnchored(at: anchor)
/// ```
///
/// The store's calls are synchronous, so each call here waits for its
/// request on the calling thread: make them on a thread that may block
/// (the store's async API runs them on Dispatch threads), not on the
/// concurrency pool's.
public struct KeyServerStoreAnchor: StoreAnchor {
    enum Caller: Sendable {
        case fleet(KeyServerAdmin)
        case user(KeyServerClient)
    }
    let caller: Caller
    public let location: String

    public init(
        server: URL, operatorToken: String, transport: any KeyServerTransport = URLSessionTransport(),
        timeout: Duration = .seconds(15)
    ) throws {
        caller = .fleet(
            try KeyServerAdmin(server: server, operatorToken: operatorToken, transport: transport, timeout: timeout))
        location = server.absoluteString
    }

    /// The signed-in user's anchor for their own store, with their sign-in token.
    public init(client: KeyServerClient) {
        caller = .user(client)
        location = client.server.absoluteString + " (user " + client.account + ")"
    }

    public func anchoredState(store storeID: String) throws -> StoreAnchorState? {
        try Self.wait { [caller] in
            switch caller {
            case .fleet(let admin): try await admin.storeAnchor(store: storeID)
            case .user(let client): try await client.storeAnchor(store: storeID)
            }
        }
    }

    func send(_ state: StoreAnchorState, store storeID: String, accept: Bool) throws -> StoreAnchorState {
        try Self.wait { [caller] in
            switch caller {
            case .fleet(let admin): try await admin.anchorStore(store: storeID, state: state, accept: accept)
            case .user(let client): try await client.anchorStore(store: storeID, state: state, accept: accept)
            }
        }
    }

    @discardableResult
    public func publish(_ state: StoreAnchorState, store storeID: String) throws -> StoreAnchorState {
        do {
            return try send(state, store: storeID, accept: false)
        } catch let error as KeyClientError where error.status == 409 {
            // Another process published a newer state meanwhile: nothing to
            // do. What is not one history with ours is refused.
            guard let anchored = try anchoredState(store: storeID) else { throw error }
            switch state.compared(to: anchored) {
            case .same, .older: return anchored
            case .newer, .forked: throw StoreAnchors.forked(state, anchored, at: location)
            }
        }
    }

    public func accept(_ state: StoreAnchorState, store storeID: String) throws {
        _ = try send(state, store: storeID, accept: true)
    }

    /// Runs `body` as a task and waits for it on this thread.
    static func wait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }
}
