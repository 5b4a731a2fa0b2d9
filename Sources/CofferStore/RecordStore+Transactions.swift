import Coffer
import Foundation
import GRDB

extension RecordStore {
    /// A write transaction with the store's state as of its start (reloaded
    /// first when another process or job moved the epoch). SQLite's errors
    /// become Coffer errors: a duplicate primary key is `refused`.
    func write<T>(_ body: (any StoreConnection, StoreState) throws -> T) throws -> T {
        try backend.write(exclusive: false) { db in try body(db, try refreshed(db)) }
    }

    /// A read with the store's state as of its snapshot. On a backend with
    /// ``SnapshotReads`` the state held is tried first, with no
    /// transaction; when the epoch moved, or the read needs more than one
    /// statement, it runs again in a transaction.
    func read<T>(_ body: (any StoreConnection, StoreState) throws -> T) throws -> T {
        if let snapshots = backend as? any SnapshotReads {
            let held = state.withLock { $0 }
            if let result = try snapshots.read(atEpoch: held.epoch, { db in try body(db, held) }) { return result }
        }
        return try backend.read { db in try body(db, try refreshed(db)) }
    }

    /// A write transaction that changes the state itself (keys, schema,
    /// job): the rows that changed are written and the epoch moves, in the
    /// same transaction as whatever else `body` writes.
    @discardableResult
    func change<T>(_ body: (any StoreConnection, inout StoreState) throws -> T) throws -> T {
        try backend.write(exclusive: true) { db in
            let old = try refreshed(db)
            var new = old
            let result = try body(db, &new)
            try new.save(db, over: old)
            state.withLock { $0 = new }
            return result
        }
    }

    /// The state at the epoch `db` holds. A newer key ring is read with the
    /// data key already held (no KDF); if its secret was changed, the store
    /// must be opened again.
    func refreshed(_ db: any StoreConnection) throws -> StoreState {
        let epoch = try StoreState.epoch(db)
        let current = state.withLock { $0 }
        guard epoch != current.epoch else { return current }
        let fresh = try StoreState.load(try StoreState.meta(db), where: path) { try current.ringFile.reopened($0) }
        state.withLock { $0 = fresh }
        return fresh
    }
}
