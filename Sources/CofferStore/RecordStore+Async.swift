import Coffer
import Foundation

/// Async twins for server code: the same calls, run on Dispatch threads
/// so that the cooperative thread pool never waits on SQLite, on the
/// PostgreSQL server or on a batch of sealing.
///
/// ```swift
/// let id = try await store.put(["to": .text("Grandma"), "description": .text("a scarf")], into: "presents")
/// let found = try await store.find("presents", where: "to", equals: .text("Grandma"))
/// ```
extension RecordStore {
    @discardableResult
    public func put(_ record: StoreRecord, into tableName: String) async throws -> StoreValue {
        try await BlockingWork.run { try self.put(record, into: tableName) }
    }

    @discardableResult
    public func put(contentsOf records: [StoreRecord], into tableName: String) async throws -> [StoreValue] {
        try await BlockingWork.run { try self.put(contentsOf: records, into: tableName) }
    }

    public func get(_ tableName: String, id key: StoreValue) async throws -> StoreRecord? {
        try await BlockingWork.run { try self.get(tableName, id: key) }
    }

    public func find(_ tableName: String, where conditions: StoreRecord) async throws -> [StoreRecord] {
        try await BlockingWork.run { try self.find(tableName, where: conditions) }
    }

    public func find(_ tableName: String, where fieldName: String, equals value: StoreValue) async throws
        -> [StoreRecord]
    {
        try await BlockingWork.run { try self.find(tableName, where: fieldName, equals: value) }
    }

    public func find(_ tableName: String, where fieldName: String, hasToken token: String) async throws
        -> [StoreRecord]
    {
        try await BlockingWork.run { try self.find(tableName, where: fieldName, hasToken: token) }
    }

    @discardableResult
    public func update(_ tableName: String, id key: StoreValue, set changes: StoreRecord) async throws
        -> StoreRecord?
    {
        try await BlockingWork.run { try self.update(tableName, id: key, set: changes) }
    }

    @discardableResult
    public func delete(_ tableName: String, id key: StoreValue) async throws -> Bool {
        try await BlockingWork.run { try self.delete(tableName, id: key) }
    }

    public func verify(batchSize: Int = 2000) async throws -> StoreVerification {
        try await BlockingWork.run { try self.verify(batchSize: batchSize) }
    }
}
