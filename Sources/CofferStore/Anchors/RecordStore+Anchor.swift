import Coffer
import Foundation

/// One anchor a store keeps its state at, and how far it is from its next
/// publication.
final class AnchorKeeper: Sendable {
    let anchor: any StoreAnchor
    let policy: StoreAnchorPolicy
    /// Commits since the last publication, its time, and whether one is
    /// under way (its own reads then do not start another).
    let progress = Locked((commits: 0, last: Date(), busy: false))
    /// The last publication that failed (an anchor out of reach), tried
    /// again at the next one; thrown by `close` if it still fails there.
    let failure = Locked<(any Error)?>(nil)

    init(_ anchor: any StoreAnchor, policy: StoreAnchorPolicy) {
        self.anchor = anchor
        self.policy = policy
    }
}

extension RecordStore {
    /// The store's id: 32 hex digits, the name its anchors keep it under.
    public var storeID: String { Hex.encode(state.withLock { $0.keys.storeID }) }

    /// The store's state as its anchors keep it: the epoch and every
    /// table's digest shards, read in one snapshot.
    public func anchorState() throws -> StoreAnchorState {
        try read { work in
            let (db, state) = (work.db, work.state)
            var shards: [String: [RecordSetDigest.Shard]] = [:]
            if state.recordSet != nil {
                for name in state.schema.digestNames {
                    shards[name] = try RecordSetDigest.shards(of: name, db, keys: state.keys)
                }
            }
            return StoreAnchorState.of(storeID: state.keys.storeID, epoch: state.epoch, shards: shards)
        }
    }

    /// Keeps the store's state at `anchor` from now on (docs/store.md,
    /// "Anchors"): checks at once that the database is at least as new as
    /// the state anchored there and continues it — else `rolledBack`, and
    /// nothing more is read — then publishes the state; afterwards it
    /// checks and publishes again as `policy` says, after each job and at
    /// ``close()``. A check that fails later refuses every call after it.
    /// An anchor out of reach is tried again at the next publication.
    ///
    /// ```swift
    /// let store = try RecordStore.open(sqlite: path, secret: secret)
    /// try store.keepAnchored(at: FolderStoreAnchor.user)
    /// ```
    public func keepAnchored(at anchor: any StoreAnchor, policy: StoreAnchorPolicy = StoreAnchorPolicy()) throws {
        let keeper = AnchorKeeper(anchor, policy: policy)
        do {
            try anchor.publish(try check(keeper), store: storeID)
        } catch let error as CofferError where error.code == .rolledBack {
            anchorFailure.withLock { $0 = error }
            throw error
        }
        anchors.withLock { $0.append(keeper) }
    }

    /// The database's state, once checked against what `keeper`'s anchor
    /// holds: read after the anchored state, so that a state another
    /// process published meanwhile is never newer than the one read here.
    func check(_ keeper: AnchorKeeper) throws -> StoreAnchorState {
        let anchored = try keeper.anchor.anchoredState(store: storeID)
        let current = try anchorState()
        guard let anchored else { return current }
        switch current.compared(to: anchored) {
        case .same, .newer: return current
        case .older: throw StoreAnchors.older(current, anchored, at: keeper.anchor.location)
        case .forked: throw StoreAnchors.forked(current, anchored, at: keeper.anchor.location)
        }
    }

    /// After a transaction (`committed` when it wrote): each anchor whose
    /// time has come is checked and published to; `force` publishes now
    /// (after a job, at close). Returns the last publication error.
    @discardableResult
    func anchorTick(committed: Bool, force: Bool = false) -> (any Error)? {
        var last: (any Error)?
        for keeper in anchors.withLock({ $0 }) {
            let due = keeper.progress.withLock { progress -> Bool in
                if committed { progress.commits += 1 }
                guard !progress.busy,
                    force || progress.commits >= keeper.policy.commits
                        || Date().timeIntervalSince(progress.last) >= keeper.policy.interval
                else { return false }
                progress = (0, Date(), true)
                return true
            }
            guard due else { continue }
            defer { keeper.progress.withLock { $0.busy = false } }
            do {
                try keeper.anchor.publish(try check(keeper), store: storeID)
                keeper.failure.withLock { $0 = nil }
            } catch let error as CofferError where error.code == .rolledBack {
                anchorFailure.withLock { $0 = error }
                last = error
            } catch {
                keeper.failure.withLock { $0 = error }
                last = error
            }
        }
        return last
    }

    /// The state each anchor holds for this store, beside the database's.
    public func anchorStatus() throws -> (database: StoreAnchorState, anchored: [(String, StoreAnchorState?)]) {
        let anchored = try anchors.withLock { $0 }.map {
            ($0.anchor.location, try $0.anchor.anchoredState(store: storeID))
        }
        return (try anchorState(), anchored)
    }
}
