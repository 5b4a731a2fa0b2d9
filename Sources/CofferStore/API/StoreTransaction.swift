import Coffer
import Foundation

/// The record operations of a ``RecordStore`` inside one transaction, as
/// GRDB's `write { db in … }` gives a `Database`: everything done in the
/// closure is committed together, or, when it throws, none of it.
///
/// ```swift
/// try store.write { tx in
///     let scarf = try tx.put(["to": .text("Grandma"), "description": .text("a scarf")], into: "presents")
///     try tx.update("presents", id: scarf, set: ["to": .text("Gran")])
///     try tx.delete("presents", id: .integer(3))
/// }
/// let (grandma, sam) = try store.read { tx in
///     (try tx.find("presents", where: "to", equals: .text("Gran")), try tx.get("presents", id: .integer(10)))
/// }
/// ```
///
/// A transaction is valid only inside its closure; used after it returns,
/// every call throws `refused`. Inside `RecordStore.read(_:)` the calls
/// that write throw `refused`. Inside the closure, go through the
/// transaction, not the store: as with GRDB, a transaction does not nest
/// another one on the same store.
public final class StoreTransaction {
    private let store: RecordStore
    private let work: StoreWork
    private let writable: Bool
    fileprivate var open = true
    /// Whether a delete or an update left old cells behind in the WAL.
    fileprivate var overwrote = false

    fileprivate init(store: RecordStore, work: StoreWork, writable: Bool) {
        self.store = store
        self.work = work
        self.writable = writable
    }

    /// The schema as of this transaction.
    var schema: StoreSchema { work.state.schema }

    private func checked(writing: Bool) throws -> StoreWork {
        guard open else { throw CofferError(.refused, "a store transaction is used only inside its closure") }
        guard writable || !writing else { throw CofferError(.refused, "a read transaction does not write") }
        return work
    }

    @discardableResult
    public func put(_ record: StoreRecord, into tableName: String) throws -> StoreValue {
        try put(contentsOf: [record], into: tableName)[0]
    }

    @discardableResult
    public func put(contentsOf records: [StoreRecord], into tableName: String) throws -> [StoreValue] {
        let work = try checked(writing: true)
        return try store.put(contentsOf: records, into: tableName, work)
    }

    public func get(_ tableName: String, id key: StoreValue) throws -> StoreRecord? {
        let work = try checked(writing: false)
        return try store.get(tableName, id: key, work)
    }

    public func find(_ tableName: String, where conditions: StoreRecord) throws -> [StoreRecord] {
        let work = try checked(writing: false)
        return try store.find(tableName, where: conditions, work)
    }

    public func find(_ tableName: String, where fieldName: String, equals value: StoreValue) throws -> [StoreRecord] {
        try find(tableName, where: [fieldName: value])
    }

    public func find(_ tableName: String, where fieldName: String, hasToken token: String) throws -> [StoreRecord] {
        let work = try checked(writing: false)
        return try store.find(tableName, where: fieldName, hasToken: token, work)
    }

    public func fetchAll(_ query: StoreQuery) throws -> [StoreRecord] {
        let work = try checked(writing: false)
        return try store.fetch(query, counting: false, work).records
    }

    public func fetchCount(_ query: StoreQuery) throws -> Int {
        let work = try checked(writing: false)
        return try store.fetch(query, counting: true, work).count
    }

    @discardableResult
    public func update(_ tableName: String, id key: StoreValue, set changes: StoreRecord) throws -> StoreRecord? {
        let work = try checked(writing: true)
        let updated = try store.update(tableName, id: key, set: changes, work)
        overwrote = overwrote || updated != nil
        return updated
    }

    @discardableResult
    public func delete(_ tableName: String, id key: StoreValue) throws -> Bool {
        let work = try checked(writing: true)
        let deleted = try store.delete(tableName, id: key, work)
        overwrote = overwrote || deleted
        return deleted
    }
}

extension RecordStore {
    /// Runs `body` in one write transaction: all its puts, updates and
    /// deletes are committed together, or none when it throws.
    public func write<T>(_ body: (StoreTransaction) throws -> T) throws -> T {
        var overwrote = residue.withLock { $0 }
        let result = try write { work in
            let transaction = StoreTransaction(store: self, work: work, writable: true)
            defer {
                transaction.open = false
                overwrote = overwrote || transaction.overwrote
            }
            return try body(transaction)
        }
        if overwrote { clearResidue() }
        return result
    }

    /// Runs `body` in one read transaction: every get and find in it sees
    /// the same snapshot of the store.
    public func read<T>(_ body: (StoreTransaction) throws -> T) throws -> T {
        // Always a real transaction: the snapshot shortcut of one-statement
        // reads could run `body` twice.
        try checkOpen()
        return try backend.read { db in
            let transaction = StoreTransaction(
                store: self, work: StoreWork(db: db, state: try refreshed(db)), writable: false)
            defer { transaction.open = false }
            return try body(transaction)
        }
    }

    /// `write(_:)` on a Dispatch thread, off the cooperative pool.
    ///
    /// ```swift
    /// try await store.write { transaction in
    ///     _ = try transaction.put(["title": "Groceries", "body": "eggs"], into: "notes")
    ///     _ = try transaction.delete("notes", id: 7)
    /// }
    /// ```
    public func write<T: Sendable>(_ body: @escaping @Sendable (StoreTransaction) throws -> T) async throws -> T {
        try await BlockingWork.run { try self.write(body) }
    }

    /// `read(_:)` on a Dispatch thread, off the cooperative pool.
    public func read<T: Sendable>(_ body: @escaping @Sendable (StoreTransaction) throws -> T) async throws -> T {
        try await BlockingWork.run { try self.read(body) }
    }
}
