#if Server
import CofferStore
import Foundation
import GRDB

extension SQLiteKeyRows {
    /// Reads every key of the batch, records its DPoP proofs
    /// (``SpentProofs``) and appends the releases in one write
    /// transaction: SQLite answers the reads (a few indexed lookups each)
    /// from its page cache in microseconds. Values are bound and read
    /// through SQLite's C API (CofferStore's `SQLiteStoreConnection`): GRDB's
    /// `StatementArguments` and `Row` cost more than the lookups.
    func release(_ requests: [ReleaseRequest], now: Int64) async throws -> [Result<StoredVersion?, any Error>] {
        _ = try await auditLinks.key()
        let (results, spent) = try await pool.write { db in try self.release(requests, now: now, db) }
        // Committed: the set may hold what the log now holds.
        if let spent { self.spent.commit(spent, now: now) }
        return results
    }

    /// Batch after batch in holds of GRDB's writer, each batch its own
    /// transaction, answered once committed. The runner never leaves the
    /// writer's queue while batches wait: the writer's thread answers a
    /// batch and takes the next itself, and when the queue is empty it
    /// parks up to ``idleWait`` for the requests its answers bring. (Handing
    /// the writer back, and asking for it again from the cooperative pool,
    /// where the runner's task queues behind the requests' own, took 1.5–3
    /// ms each time on a machine where a batch takes 0.4: docs/performance.md.)
    /// A hold ends after ``holdLimit``, so that a key's creation, a rotation
    /// or a shred waits at most that long behind a stream of fetches; the
    /// next hold is queued on the writer behind them.
    func releaseBatches(
        next: @escaping @Sendable (Duration) -> [ReleaseRequest]?,
        answer: @escaping @Sendable ([Result<StoredVersion?, any Error>]) -> Void, now: @escaping @Sendable () -> Int64
    ) async throws {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            hold(next: next, answer: answer, now: now, done: done)
        }
    }

    /// One hold, on the writer's queue; it queues the next when its time is up.
    private func hold(
        next: @escaping @Sendable (Duration) -> [ReleaseRequest]?,
        answer: @escaping @Sendable ([Result<StoredVersion?, any Error>]) -> Void, now: @escaping @Sendable () -> Int64,
        done: CheckedContinuation<Void, any Error>
    ) {
        pool.asyncWriteWithoutTransaction { db in
            let end = ContinuousClock.now + Self.holdLimit
            do {
                while true {
                    let left = end - ContinuousClock.now
                    guard left > .zero else {
                        return self.hold(next: next, answer: answer, now: now, done: done)
                    }
                    guard let requests = next(min(left, Self.idleWait)) else { return done.resume() }
                    let now = now()
                    let outcome = try Self.transaction(db) { try self.release(requests, now: now, db) }
                    if let spent = outcome.1 { self.spent.commit(spent, now: now) }
                    answer(outcome.0)
                }
            } catch {
                done.resume(throwing: error)
            }
        }
    }

    /// `body` in one write transaction, begun and committed through
    /// statements prepared once: GRDB's `inTransaction` prepares its BEGIN
    /// and COMMIT anew each time, which a batch of releases felt. A failure
    /// rolls back whatever SQLite left open before it is thrown.
    private static func transaction<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        let connection = SQLiteStoreConnection(db: db)
        _ = try connection.execute("BEGIN IMMEDIATE", [])
        do {
            let result = try body()
            _ = try connection.execute("COMMIT", [])
            return result
        } catch {
            if db.isInsideTransaction { try? db.execute(sql: "ROLLBACK") }
            throw error
        }
    }

    static let holdLimit = Duration.milliseconds(5)
    static let idleWait = Duration.milliseconds(1)

    /// One batch, inside the caller's transaction: first each request's
    /// shared counts, then the releases of the requests none refused.
    private func release(_ requests: [ReleaseRequest], now: Int64, _ db: Database) throws -> (
        [Result<StoredVersion?, any Error>], SpentProofs.Pending?
    ) {
        let connection = SQLiteStoreConnection(db: db)
        let refused = try Self.raise(requests.map(\.counts), connection)
        guard refused.contains(where: { $0 != nil }) else {
            return try release(admitted: requests, now: now, connection)
        }
        let admitted = zip(requests, refused).filter { $0.1 == nil }.map(\.0)
        let (released, spent) = try release(admitted: admitted, now: now, connection)
        return (CountPlan.merge(refused, released), spent)
    }

    /// Raises the batch's shared counts (``CountPlan``), each bucket by
    /// one upsert, and returns what refuses each request.
    static func raise(_ counts: [[LimitedCount]], _ connection: SQLiteStoreConnection) throws -> [SharedCountFull?] {
        let plan = CountPlan(counts)
        var after: [RateCount: Int] = [:]
        for (count, added) in plan.raises {
            let row = try connection.firstRow(
                countSQL, [count.bucket.databaseValue, count.windowEnd.databaseValue, added.databaseValue])
            after[count] = try row.flatMap { try value($0[0], "count", as: Int.self) } ?? added
        }
        return plan.refusals(after)
    }

    static let countSQL = """
        INSERT INTO rate_counts (bucket, window_end, count) VALUES (?, ?, ?)
        ON CONFLICT (bucket, window_end) DO UPDATE SET count = count + excluded.count RETURNING count
        """

    private func release(admitted requests: [ReleaseRequest], now: Int64, _ connection: SQLiteStoreConnection) throws
        -> ([Result<StoredVersion?, any Error>], SpentProofs.Pending?)
    {
        guard !requests.isEmpty else { return ([], nil) }
        let proofs = requests.compactMap(\.proof)
        let (recorded, spent) = proofs.isEmpty ? ([], nil) : try self.spent.record(proofs, connection)
        let fresh = KeySnapshot.spend(requests) { recorded.contains($0) }
        let snapshots = try requests.map { ($0, try Self.snapshot(connection, $0.name, version: $0.version)) }
        let (results, audit) = KeySnapshot.outcomes(snapshots, fresh: fresh, now: now)
        try Self.append(connection, audit, now: now, links: try auditLinks.loaded())
        return (results, spent)
    }

    /// The subject's shred state, the key's minimum version and the wanted
    /// version (nil: the latest), in one statement.
    static func snapshot(_ connection: SQLiteStoreConnection, _ name: KeyName, version: Int?) throws -> KeySnapshot {
        var arguments = [name.realm, name.subject, name.device, name.purpose].map(\.databaseValue)
        if let version { arguments.append(version.databaseValue) }
        // One row always: the outer query is FROM (SELECT 1).
        guard let row = try connection.firstRow(version == nil ? latestSQL : versionSQL, arguments), row.count == 5
        else {
            throw KeyServerError(.databaseError, "the key lookup returned no row")
        }
        let version = try Self.value(row[3], "version", as: Int.self)
        return KeySnapshot(
            shredAt: try Self.value(row[0], "shred_at", as: Int64.self),
            shredded: (try Self.value(row[1], "shredded", as: Int64.self) ?? 0) != 0,
            minimum: try Self.value(row[2], "minimum", as: Int.self) ?? 1,
            stored: try version.map { version in
                guard let wrapped = try Self.value(row[4], "wrapped", as: Data.self) else {
                    throw Self.malformed("key row (no wrapped key)")
                }
                return StoredVersion(version: version, wrapped: wrapped)
            })
    }

    /// Shred state, minimum and key row, each a lookup by primary key; the
    /// latest version is found by `max`, which SQLite answers from the end
    /// of the key's range of the primary key (a subquery with ORDER BY and
    /// LIMIT, joined, was materialised into a table on every release).
    private static let snapshotSQL = """
        SELECT s.shred_at, s.shredded, f.minimum, k.version, k.wrapped FROM (SELECT 1)
        LEFT JOIN subjects s ON s.realm = ?1 AND s.subject = ?2
        LEFT JOIN key_floors f ON f.realm = ?1 AND f.subject = ?2 AND f.device = ?3 AND f.purpose = ?4
        LEFT JOIN keys k ON k.realm = ?1 AND k.subject = ?2 AND k.device = ?3 AND k.purpose = ?4 AND k.version =
        """
    private static let latestSQL =
        snapshotSQL
        + " (SELECT max(version) FROM keys WHERE realm = ?1 AND subject = ?2 AND device = ?3 AND purpose = ?4)"
    private static let versionSQL = snapshotSQL + " ?5"

    /// A column's value: nil for NULL, and an error, not nil, for a value
    /// of another type (a table someone rebuilt without its types).
    static func value<T: DatabaseValueConvertible>(_ stored: DatabaseValue, _ column: String, as _: T.Type) throws -> T?
    {
        guard !stored.isNull else { return nil }
        guard let value = T.fromDatabaseValue(stored) else { throw malformed("\(column) value") }
        return value
    }

    /// The same for the column named `column` of a row read by name.
    static func value<T: DatabaseValueConvertible>(_ row: [String: DatabaseValue], _ column: String, as type: T.Type)
        throws -> T?
    {
        try value(row[column] ?? .null, column, as: type)
    }

    static func malformed(_ what: String) -> KeyServerError {
        KeyServerError(.databaseError, "the database holds a malformed \(what)")
    }
}
#endif
