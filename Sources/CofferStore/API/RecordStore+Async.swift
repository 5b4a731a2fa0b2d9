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

    public func fetchAll(_ query: StoreQuery) async throws -> [StoreRecord] {
        try await BlockingWork.run { try self.fetchAll(query) }
    }

    public func fetchCount(_ query: StoreQuery) async throws -> Int {
        try await BlockingWork.run { try self.fetchCount(query) }
    }

    public func fetchOne(_ query: StoreQuery) async throws -> StoreRecord? {
        try await BlockingWork.run { try self.fetchOne(query) }
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

    /// Opens every cell, checks every index value and each table's record-set digest,
    /// `batchSize` rows per read transaction, and reports what does not hold.
    ///
    /// ```swift
    /// let report = try await store.verify()
    /// if !report.isIntact { print(report) }  // each problem names its table and key
    /// ```
    public func verify(batchSize: Int = 2000) async throws -> StoreVerification {
        try await BlockingWork.run { try self.verify(batchSize: batchSize) }
    }
}

/// The jobs and the planner, for server code. A job runs on a Dispatch
/// thread; when the calling task is cancelled it stops after the batch
/// in hand (committed, so nothing is lost) with `CancellationError`, and
/// resumes from there when started again.
///
/// ```swift
/// let report = try await store.rotateKeys { progress in
///     logger.info("rotated \(progress.done) of \(progress.total)")
/// }
/// ```
extension RecordStore {
    @discardableResult
    public func rotateKeys(
        batchSize: Int = 1000, progress: @escaping @Sendable (StoreProgress) throws -> Void = { _ in }
    )
        async throws -> StoreJobReport
    {
        try await Self.cancellable(progress) { progress in try self.rotateKeys(batchSize: batchSize, progress: progress)
        }
    }

    @discardableResult
    public func reindex(batchSize: Int = 1000, progress: @escaping @Sendable (StoreProgress) throws -> Void = { _ in })
        async throws -> StoreJobReport
    {
        try await Self.cancellable(progress) { progress in try self.reindex(batchSize: batchSize, progress: progress) }
    }

    @discardableResult
    public func migrate(
        _ tableName: String, field fieldName: String, bind: [String] = [], indexes: [StoreSchema.Index] = [],
        batchSize: Int = 1000, progress: @escaping @Sendable (StoreProgress) throws -> Void = { _ in }
    ) async throws -> StoreJobReport {
        try await Self.cancellable(progress) { progress in
            try self.migrate(
                tableName, field: fieldName, bind: bind, indexes: indexes, batchSize: batchSize, progress: progress)
        }
    }

    public func plan(
        _ tableName: String, field fieldName: String, transforms: [IndexTransform]? = nil, sampleSize: Int = 100_000
    ) async throws -> StorePlan {
        try await BlockingWork.run {
            try self.plan(tableName, field: fieldName, transforms: transforms, sampleSize: sampleSize)
        }
    }

    public func pendingJob() async throws -> StoreJob? {
        try await BlockingWork.run { try self.pendingJob() }
    }

    /// Runs `job` off the cooperative pool with a progress closure that
    /// throws `CancellationError` once the task is cancelled.
    static func cancellable(
        _ progress: @escaping @Sendable (StoreProgress) throws -> Void,
        _ job: @escaping @Sendable (@escaping (StoreProgress) throws -> Void) throws -> StoreJobReport
    ) async throws -> StoreJobReport {
        let cancelled = Locked(false)
        return try await withTaskCancellationHandler {
            try await BlockingWork.run {
                try job { step in
                    if cancelled.withLock({ $0 }) { throw CancellationError() }
                    try progress(step)
                }
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
        }
    }
}

/// The typed calls (``SealedRecord``), for async code.
extension RecordStore {
    /// Puts `record` (``put(_:)-(R)``'s async twin, off the caller's thread), returning it with
    /// the primary key the store gave it when it had none.
    ///
    /// ```swift
    /// let note = try await store.put(Note(id: nil, title: "Groceries", body: "eggs, flour"))
    /// print(note.id!)  // given by the store
    /// ```
    @discardableResult
    public func put<R: SealedRecord>(_ record: R) async throws -> R {
        try await BlockingWork.run { try self.put(record) }
    }

    @discardableResult
    public func put<R: SealedRecord>(contentsOf records: [R]) async throws -> [R] {
        try await BlockingWork.run { try self.put(contentsOf: records) }
    }

    /// The record of `type` whose primary key is `key`, its sealed fields opened; nil when there is none.
    ///
    /// ```swift
    /// let note = try await store.get(Note.self, id: .integer(42))
    /// ```
    public func get<R: SealedRecord>(_ type: R.Type, id key: StoreValue) async throws -> R? {
        try await BlockingWork.run { try self.get(type, id: key) }
    }

    /// The records of `type` that `query` asks for (every one when nil), in its order.
    ///
    /// ```swift
    /// let recent = try await store.fetchAll(
    ///     Note.self, Note.query.filter(StoreColumn("pages") >= 1).order(by: "createdAt", descending: true).limit(20))
    /// ```
    public func fetchAll<R: SealedRecord>(_ type: R.Type, _ query: StoreQuery? = nil) async throws -> [R] {
        try await BlockingWork.run { try self.fetchAll(type, query) }
    }

    public func fetchOne<R: SealedRecord>(_ type: R.Type, _ query: StoreQuery? = nil) async throws -> R? {
        try await BlockingWork.run { try self.fetchOne(type, query) }
    }

    public func fetchCount<R: SealedRecord>(_ type: R.Type, _ query: StoreQuery? = nil) async throws -> Int {
        try await BlockingWork.run { try self.fetchCount(type, query) }
    }

    /// Writes every field of `record` over the stored one with its primary key (a new version of
    /// the record, sealed again); false when there is no such record.
    ///
    /// ```swift
    /// note.body = "eggs, flour, butter"
    /// let found = try await store.update(note)  // false when the record is gone
    /// ```
    @discardableResult
    public func update<R: SealedRecord>(_ record: R) async throws -> Bool {
        try await BlockingWork.run { try self.update(record) }
    }

    /// Deletes the record of `type` whose primary key is `key`; false when there was none.
    ///
    /// ```swift
    /// let deleted = try await store.delete(Note.self, id: .integer(42))
    /// ```
    @discardableResult
    public func delete<R: SealedRecord>(_ type: R.Type, id key: StoreValue) async throws -> Bool {
        try await BlockingWork.run { try self.delete(type, id: key) }
    }

    /// ``create(sqlite:schema:secret:kdf:rollbackGuard:)`` on a Dispatch
    /// thread: the key derivation never runs on the caller's (an app's
    /// main thread, or the cooperative pool).
    public static func create(
        sqlite path: String, schema: StoreSchema, secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt,
        rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard
    ) async throws -> RecordStore {
        try await BlockingWork.run {
            try RecordStore.create(
                sqlite: path, schema: schema, secret: secret, kdf: kdf, rollbackGuard: rollbackGuard)
        }
    }

    /// ``open(sqlite:secret:rollbackGuard:)`` on a Dispatch thread: the
    /// key derivation never runs on the caller's.
    public static func open(
        sqlite path: String, secret: UnlockSecret,
        rollbackGuard: (any RollbackGuard)? = RecordStore.defaultRollbackGuard
    ) async throws -> RecordStore {
        try await BlockingWork.run { try RecordStore.open(sqlite: path, secret: secret, rollbackGuard: rollbackGuard) }
    }
}
