import Coffer
import Foundation
import GRDB

extension RecordStore {
    /// A write transaction with the store's state as of its start (reloaded
    /// first when another process or job moved the epoch). SQLite's errors
    /// become Coffer errors: a duplicate primary key is `refused`.
    func write<T>(_ body: (any StoreConnection, StoreState) throws -> T) throws -> T {
        do {
            return try pool.write { db in
                let connection = SQLiteConnection(db: db)
                return try body(connection, try refreshed(connection))
            }
        } catch let error as DatabaseError {
            throw Self.coffer(error)
        }
    }

    func read<T>(_ body: (any StoreConnection, StoreState) throws -> T) throws -> T {
        do {
            return try pool.read { db in
                let connection = SQLiteConnection(db: db)
                return try body(connection, try refreshed(connection))
            }
        } catch let error as DatabaseError {
            throw Self.coffer(error)
        }
    }

    /// A write transaction that changes the state itself (keys, schema,
    /// job): the rows that changed are written and the epoch moves, in the
    /// same transaction as whatever else `body` writes.
    @discardableResult
    func change<T>(_ body: (any StoreConnection, inout StoreState) throws -> T) throws -> T {
        try write { db, old in
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

    static func coffer(_ error: DatabaseError) -> CofferError {
        if error.resultCode == .SQLITE_CONSTRAINT {
            return CofferError(.refused, "a record with this primary key exists (\(error.message ?? "constraint"))")
        }
        return CofferError(.io, "the store's database failed: \(error.message ?? "SQLite error \(error.resultCode)")")
    }
}
