import Coffer
import Foundation
import GRDB

extension RecordStore {
    /// A write transaction with the store's state as of its start (reloaded
    /// first when another process or job moved the epoch). What it changed
    /// in the record set goes into the digest in the same transaction.
    /// SQLite's errors become Coffer errors: a duplicate primary key is `refused`.
    func write<T>(_ body: (StoreWork) throws -> T) throws -> T {
        try checkOpen()
        let result = try backend.write(exclusive: false) { db in
            let state = try refreshed(db, writing: true)
            let work = StoreWork(db: db, state: state, changes: RecordSetChanges(kept: state.recordSet != nil))
            let result = try body(work)
            try RecordSetDigest.add(work.changes!, db, keys: work.state.keys)
            return result
        }
        commits.withLock { $0 &+= 1 }
        anchorTick(committed: true)
        return result
    }

    /// Closes the store: transactions under way finish, and every
    /// connection (SQLite's pool, PostgreSQL's connections) is closed once
    /// they have; every call after this is refused (`refused`). Closing
    /// twice does nothing. A store that is released closes itself too, but
    /// at a time its last user decides: close it before deleting or
    /// replacing its file (sign-out), or in tests.
    public func close() throws {
        guard !closed.withLock({ $0 }) else { return }
        // Always published at close (unless an anchor refused the store);
        // an anchor out of reach is thrown once the connections are closed.
        let unpublished = anchorFailure.withLock { $0 } == nil ? anchorTick(committed: false, force: true) : nil
        guard
            closed.withLock({ was in
                defer { was = true }
                return !was
            })
        else { return }
        try backend.close()
        if let unpublished { throw unpublished }
    }

    func checkOpen() throws {
        if closed.withLock({ $0 }) { throw CofferError(.refused, "the store at \(path) is closed") }
        if let failure = anchorFailure.withLock({ $0 }) { throw failure }
    }

    /// A read with the store's state as of its snapshot. On a backend with
    /// ``SnapshotReads`` the state held is tried first, with no
    /// transaction; when the epoch moved, or the read needs more than one
    /// statement, it runs again in a transaction.
    func read<T>(_ body: (StoreWork) throws -> T) throws -> T {
        try checkOpen()
        if let snapshots = backend as? any SnapshotReads {
            let held = state.withLock { $0 }
            if let result = try snapshots.read(atEpoch: held.epoch, { db in try body(StoreWork(db: db, state: held)) })
            {
                anchorTick(committed: false)
                return result
            }
        }
        let result = try backend.read { db in try body(StoreWork(db: db, state: try refreshed(db))) }
        anchorTick(committed: false)
        return result
    }

    /// A write transaction that changes the state itself (keys, schema,
    /// job): the rows that changed are written and the epoch moves, in the
    /// same transaction as whatever else `body` writes.
    @discardableResult
    func change<T>(_ body: (any StoreConnection, inout StoreState) throws -> T) throws -> T {
        try changeWritingRows { db, state, _ in try body(db, &state) }
    }

    /// ``change(_:)`` for a change that writes rows too: what it changed in
    /// the record set goes into the digest, under the keys it began with,
    /// before the new state is saved.
    @discardableResult
    func changeWritingRows<T>(_ body: (any StoreConnection, inout StoreState, RecordSetChanges) throws -> T) throws
        -> T
    {
        try checkOpen()
        let (result, epoch) = try backend.write(exclusive: true) { db in
            let old = try refreshed(db, writing: true)
            if let mark = try rollbackGuard?.highWaterMark(for: Self.guardKey(old.keys.storeID)), old.epoch < mark {
                throw Self.rolledBack(path, epoch: old.epoch, mark: mark)
            }
            var new = old
            let changes = RecordSetChanges(kept: old.recordSet != nil)
            let result = try body(db, &new, changes)
            try RecordSetDigest.add(changes, db, keys: old.keys)
            try new.save(db, over: old)
            state.withLock { $0 = new }
            return (result, new.epoch)
        }
        // Raised only once the new state committed: a crash before this
        // leaves the mark behind the database, never ahead of it.
        highestEpoch.withLock { $0 = max($0, epoch) }
        commits.withLock { $0 &+= 1 }
        try rollbackGuard?.raise(Self.guardKey(state.withLock { $0.keys.storeID }), to: epoch)
        anchorTick(committed: true)
        return result
    }

    /// The state at the epoch `db` holds. A newer key ring is read with the
    /// data key already held (no KDF); if its secret was changed, the store
    /// must be opened again. A write transaction sees the newest state, so
    /// one that finds an epoch older than this process already saw, or than
    /// the rollback guard's mark, is refused (`rolledBack`); a read may see
    /// an older snapshot honestly, and then keeps its state to itself.
    func refreshed(_ db: any StoreConnection, writing: Bool = false) throws -> StoreState {
        let epoch = try StoreState.epoch(db)
        if writing {
            let highest = highestEpoch.withLock { $0 }
            if epoch < highest { throw Self.rolledBack(path, epoch: epoch, mark: highest) }
        }
        let current = state.withLock { $0 }
        guard epoch != current.epoch else { return current }
        var fresh = try StoreState.load(try StoreState.meta(db), where: path) { try current.ringFile.reopened($0) }
        fresh.tenantCache = current.tenantCache
        if writing {
            if let mark = try rollbackGuard?.highWaterMark(for: Self.guardKey(fresh.keys.storeID)), fresh.epoch < mark {
                throw Self.rolledBack(path, epoch: fresh.epoch, mark: mark)
            }
            highestEpoch.withLock { $0 = max($0, fresh.epoch) }
        }
        // A newer state another process committed, now verified: the mark
        // rises to it (H1), so this process refuses anything older later.
        if fresh.epoch > current.epoch {
            try rollbackGuard?.raise(Self.guardKey(fresh.keys.storeID), to: fresh.epoch)
        }
        state.withLock { if fresh.epoch > $0.epoch { $0 = fresh } }
        return fresh
    }
}
