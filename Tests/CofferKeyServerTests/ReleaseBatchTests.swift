#if Server
import Coffer
import Foundation
import GRDB
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// A batch of releases as each backend runs it (the contract of
/// `KeyRows.release`), with the duplicates and refusals that timing alone
/// rarely puts into one batch over HTTP.
@Suite struct ReleaseBatchTests {
    static func store(_ backend: Backend) async throws -> (ServerKeyStore, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-batch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        switch backend {
        case .sqlite:
            return (try ServerKeyStore(path: folder.appendingPathComponent("keys.sqlite").path, kek: KeyRing()), folder)
        case .postgres:
            let store = try await ServerKeyStore.open(
                postgres: try TestPostgres.freshURL(), password: try TestPostgres.server().password, kek: KeyRing(),
                deadline: .seconds(20))
            return (store, folder)
        }
    }

    static func code(_ result: Result<StoredVersion?, any Error>) -> String? {
        guard case .failure(let error) = result else { return nil }
        return (error as? KeyServerError)?.code.name ?? "\(error)"
    }

    /// One proof twice in one batch: the first copy is spent, the second is
    /// a replay, and so is every copy in a later batch. A request refused
    /// takes no release into the audit log; the others do, in order.
    @Test(arguments: Backend.allCases)
    func aProofIsSpentOnceInABatchAndAcrossBatches(_ backend: Backend) async throws {
        let (store, folder) = try await Self.store(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let name = try KeyName(realm: "default", subject: "ana", device: "jkt:abc", purpose: "notes")
        let made = try await store.current(name)
        let never = try KeyName(realm: "default", subject: "ana", device: "jkt:abc", purpose: "never-made")
        // A key whose version 1 is retired, and a subject whose shred is pending.
        let old = try KeyName(realm: "default", subject: "cy", purpose: "old")
        _ = try await store.current(old)
        _ = try await store.rotate(old)
        try await store.retire(old, below: 2)
        let gone = try KeyName(realm: "default", subject: "dee", purpose: "notes")
        _ = try await store.current(gone)
        _ = try await store.shred(realm: "default", subject: "dee", after: 600)
        let now = store.now()
        let (first, second) = (
            ProofUse(hash: Data(repeating: 1, count: 32), expires: now + 120),
            ProofUse(hash: Data(repeating: 2, count: 32), expires: now + 120)
        )
        let batch = [
            ReleaseRequest(name: name, version: nil, proof: first),
            ReleaseRequest(name: name, version: nil, proof: first),
            ReleaseRequest(name: never, version: nil, proof: second),
            ReleaseRequest(name: name, version: 1, proof: nil),
            ReleaseRequest(name: name, version: 2, proof: nil),
            ReleaseRequest(name: old, version: 1, proof: nil),
            ReleaseRequest(name: old, version: nil, proof: nil),
            ReleaseRequest(name: gone, version: nil, proof: nil),
        ]
        let all = try await store.rows.release(batch, now: now)
        #expect(
            all.map(Self.code) == [nil, "dpop-proof-replayed", nil, nil, nil, "key-retired", nil, "shred-pending"])
        #expect(try all[6].get()?.version == 2)
        let results = Array(all.prefix(5))
        let versions = results.map { result in
            switch result {
            case .success(let row): row.map { "v\($0.version)" } ?? "none"
            case .failure: "refused"
            }
        }
        #expect(versions == ["v1", "refused", "none", "v1", "none"])
        #expect(try results[0].get()?.wrapped == results[3].get()?.wrapped)
        #expect(made.version == 1)

        let again = try await store.rows.release(
            [
                ReleaseRequest(name: name, version: nil, proof: second),
                ReleaseRequest(name: name, version: nil, proof: first),
            ],
            now: now)
        #expect(again.map(Self.code) == ["dpop-proof-replayed", "dpop-proof-replayed"])

        // The first use's create and release, then the two releases of
        // the batch that found a version; nothing for the refusals.
        let history = try await store.auditHistory(realm: "default", subject: "ana")
        #expect(history.map(\.action) == ["create", "release", "release", "release"])
        #expect(history.suffix(2).map(\.version) == [1, 1])
        // The retired version and the pending shred released nothing.
        let cy = try await store.auditHistory(realm: "default", subject: "cy")
        #expect(cy.map(\.action) == ["create", "release", "rotate", "retire", "release"])
        #expect(cy.last?.version == 2)
        let dee = try await store.auditHistory(realm: "default", subject: "dee")
        #expect(dee.map(\.action) == ["create", "release", "shred"])
        #expect(try await store.verifyAudit().broken == nil)
        await store.close()
    }

    /// A sweep forgets every expired proof — more than one delete's worth —
    /// and no proof that could still be accepted: an expired proof spent
    /// again is new to the store, one still fresh is a replay.
    @Test(arguments: Backend.allCases)
    func aSweepForgetsExpiredProofsInManyDeletesAndNoOthers(_ backend: Backend) async throws {
        let (store, folder) = try await Self.store(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let name = try KeyName(realm: "default", subject: "ana", purpose: "notes")
        _ = try await store.current(name)
        let now = store.now()
        let count = SQLiteKeyRows.forgetBatch * 2 + 7
        let proofs = (0..<count).map { index in
            ProofUse(
                hash: withUnsafeBytes(of: UInt64(index).bigEndian) { Data($0) } + Data(count: 24),
                expires: index % 2 == 0 ? now - 1 : now + 120)
        }
        let first = try await store.rows.release(
            proofs.map { ReleaseRequest(name: name, version: nil, proof: $0) }, now: now)
        #expect(first.allSatisfy { Self.code($0) == nil })
        if let rows = store.rows as? SQLiteKeyRows {
            // The set in memory dropped the expired half at once.
            #expect(rows.spent.count == count / 2)
        }
        try await store.sweep()
        if backend == .sqlite {
            let path = folder.appendingPathComponent("keys.sqlite").path
            #expect(try KeyServerTests.rowCount(path, "SELECT count(*) FROM dpop_log") == count / 2)
        }
        let again = try await store.rows.release(
            proofs.map { ReleaseRequest(name: name, version: nil, proof: $0) }, now: now)
        let refused = again.enumerated().filter { Self.code($0.element) == "dpop-proof-replayed" }.map(\.offset)
        #expect(refused == Array(stride(from: 1, to: count, by: 2)))
        await store.close()
    }
}

/// The SQLite writer never checkpoints in a commit; the checkpointer
/// beside it copies the WAL into the database file within a second.
@Suite struct CheckpointTests {
    @Test func releasesReachTheDatabaseFileWithoutACheckpointInTheirCommits() async throws {
        let (store, folder) = try await ReleaseBatchTests.store(.sqlite)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("keys.sqlite").path
        let name = try KeyName(realm: "default", subject: "ana", purpose: "notes")
        for _ in 0..<300 { _ = try await store.current(name) }
        // The database file alone, without its WAL: what was checkpointed.
        let copy = folder.appendingPathComponent("copy.sqlite").path
        var entries = 0
        for _ in 0..<20 where entries < 301 {
            try await Task.sleep(for: .milliseconds(100))
            try? FileManager.default.removeItem(atPath: copy)
            // Copied by another process: an open and close of the live
            // file in this one would drop the store's SQLite locks.
            let cp = try Spawned.run("/bin/cp", [path, copy], output: .discard)
            guard cp.status == 0 else { throw CofferError(.io, "cp \(path) failed") }
            let queue = try DatabaseQueue(path: copy)
            // (No table yet: the schema itself is still in the WAL.)
            entries = (try? await queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM audit") }) ?? 0
        }
        #expect(entries == 301)  // the first use's create and 300 releases
        await store.close()
    }

    /// Under writes without a pause the WAL stays bounded: once it holds
    /// ``WALCheckpointer/restartFrames`` the checkpointer restarts it, and
    /// the next commit writes it from its start. With passive checkpoints
    /// alone it grew by every commit, to 64 MiB here.
    @Test func theWALStaysBoundedUnderWritesWithoutAPause() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-wal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("w.sqlite").path
        // The server's writer (no automatic checkpoint, every commit synced,
        // a busy timeout to wait while a restart runs), on a table of its own.
        let pool = try SQLiteKeyRows.openPool(path)
        try await pool.write { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        }
        let checkpointer = WALCheckpointer(path: path, every: .milliseconds(10))
        defer { checkpointer.stop() }
        // 16 KiB a commit until the WAL was restarted three times, or 64 MiB.
        let body = Data(repeating: 0x5a, count: 16_384)
        var written = 0
        while checkpointer.restarts < 3 && written < 64 << 20 {
            try await pool.write { db in try db.execute(sql: "INSERT INTO t (body) VALUES (?)", arguments: [body]) }
            written += body.count
        }
        let wal = try #require(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int)
        #expect(checkpointer.restarts >= 3)
        #expect(wal < 16 << 20, "a WAL of \(wal) bytes after \(written) bytes written")
    }
}

/// What arrives while a batch runs waits and shares the next batch; the
/// batcher's counts (served at `/metrics`) say so.
@Suite struct BatcherTests {
    /// Submits `items` at once; the answers, sorted.
    static func submitted(_ items: ClosedRange<Int>, to batcher: Batcher<Int, Int>) -> Task<[Int], any Error> {
        Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for item in items { group.addTask { try await batcher.submit(item) } }
                return try await group.reduce(into: []) { $0.append($1) }.sorted()
            }
        }
    }

    @Test func requestsArrivingWhileABatchRunsShareTheNext() async throws {
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let batcher = Batcher<Int, Int> { items in
            // The first batch runs until the test lets it go.
            if items == [0] { for await _ in gate { break } }
            return items.map { .success($0 * 2) }
        }
        async let first = batcher.submit(0)
        while batcher.counts.batches == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let rest = Self.submitted(1...9, to: batcher)
        try await Task.sleep(for: .milliseconds(300))
        // None of the nine started a batch while the first ran.
        #expect(batcher.counts.batches == 1)
        open.yield()
        #expect(try await first == 0)
        #expect(try await rest.value == (1...9).map { $0 * 2 })
        let counts = batcher.counts
        #expect(counts.batches == 2)
        #expect(counts.items == 10)
    }

    /// A loop runs batch after batch in one turn: what arrives while its
    /// batch runs is its next batch, taken without another turn.
    @Test func aLoopTakesTheNextBatchInTheSameTurn() async throws {
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let turns = Locked(0)
        let batcher = Batcher<Int, Int>(loop: { next, answer in
            turns.withLock { $0 += 1 }
            while let items = next(.zero) {
                if items == [0] { for await _ in gate { break } }
                answer(items.map { .success($0 * 2) })
            }
        })
        async let first = batcher.submit(0)
        while batcher.counts.batches == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let rest = Self.submitted(1...9, to: batcher)
        while batcher.pendingCount < 9 { try await Task.sleep(for: .milliseconds(1)) }
        open.yield()
        #expect(try await first == 0)
        #expect(try await rest.value == (1...9).map { $0 * 2 })
        #expect(batcher.counts.batches == 2)
        #expect(turns.withLock { $0 } == 1)
    }

    /// A runner that asks for the next batch with time to wait is woken by
    /// the next request and takes it in the same turn; one whose wait runs
    /// out gets nil, ends its turn, and the next request starts another.
    @Test func aParkedRunnerTakesTheNextRequestInItsTurn() async throws {
        let turns = Locked(0)
        let batcher = Batcher<Int, Int>(loop: { next, answer in
            turns.withLock { $0 += 1 }
            // On a thread of its own, as GRDB's writer runs SQLite's loop:
            // a parked runner blocks its thread.
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    while let items = next(.milliseconds(800)) { answer(items.map { .success($0 * 2) }) }
                    done.resume()
                }
            }
        })
        #expect(try await batcher.submit(1) == 2)
        let asked = ContinuousClock.now
        #expect(try await batcher.submit(2) == 4)
        #expect(ContinuousClock.now - asked < .milliseconds(700), "the runner was not woken")
        #expect(turns.withLock { $0 } == 1)
        // Past the wait the turn ends; the next request starts another.
        while batcher.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try await batcher.submit(3) == 6)
        #expect(turns.withLock { $0 } == 2)
    }

    /// A loop that fails answers the batch it took with its error, and one
    /// that fails before taking any fails the next batch: no request waits
    /// for ever on a database that keeps failing, and later ones are served.
    @Test func aFailingLoopFailsOneBatchAndTheNextTurnGoesOn() async throws {
        struct Broken: Error {}
        let turns = Locked(0)
        let batcher = Batcher<Int, Int>(loop: { next, answer in
            let turn = turns.withLock { turns in
                turns += 1
                return turns
            }
            if turn == 1 { throw Broken() }
            while let items = next(.zero) {
                if items.contains(13) { throw Broken() }
                answer(items.map { .success($0) })
            }
        })
        await #expect(throws: Broken.self) { try await batcher.submit(1) }
        await #expect(throws: Broken.self) { try await batcher.submit(13) }
        #expect(try await batcher.submit(2) == 2)
        #expect(turns.withLock { $0 } == 5)  // each failure ends a turn; a turn finds the queue empty
    }
}

/// SQLite's loop holds GRDB's writer for several batches, but not for
/// ever: with batches always waiting, another write still gets its turn,
/// and the batches go on after it.
@Suite struct WriterHoldTests {
    @Test func anotherWriteGetsInThoughBatchesKeepComing() async throws {
        let (store, folder) = try await ReleaseBatchTests.store(.sqlite)
        defer { try? FileManager.default.removeItem(at: folder) }
        let name = try KeyName(realm: "default", subject: "ana", purpose: "notes")
        _ = try await store.current(name)
        let rows = try #require(store.rows as? SQLiteKeyRows)
        let counts = Locked((taken: 0, answered: 0, stop: false))
        let batches = Task {
            try await rows.releaseBatches(
                next: { _ in
                    counts.withLock { counts in
                        guard !counts.stop else { return nil }
                        counts.taken += 1
                        return [ReleaseRequest(name: name, version: nil, proof: nil)]
                    }
                },
                answer: { answers in
                    #expect(answers.count == 1)
                    if case .success(let row) = answers.first { #expect(row?.version == 1) }
                    counts.withLock { $0.answered += 1 }
                }, now: store.now)
        }
        while counts.withLock({ $0.taken }) < 100 { try await Task.sleep(for: .milliseconds(1)) }
        let asked = ContinuousClock.now
        let before = try await rows.pool.write { db in
            try db.execute(sql: "INSERT INTO server_secrets (name, value) VALUES ('hold-test', x'00')")
            return counts.withLock { $0.taken }
        }
        let waited = ContinuousClock.now - asked
        // The next hold is queued behind the write and may not have begun
        // when the write returns here: give it up to ten seconds.
        let deadline = ContinuousClock.now + .seconds(10)
        while counts.withLock({ $0.taken }) <= before, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        let after = counts.withLock { counts in
            defer { counts.stop = true }
            return counts.taken
        }
        try await batches.value
        let (taken, answered, _) = counts.withLock { $0 }
        #expect(waited < .seconds(2), "the write waited \(waited)")
        #expect(after > before, "no batch ran after the write")
        #expect(answered == taken)
        // Each batch its own committed transaction, audited.
        let audited = try await rows.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM audit WHERE action = 'release'")
        }
        #expect(audited == taken + 1)
        await store.close()
    }

    /// A batch that fails inside its transaction (an insert that a trigger,
    /// planted with Python's sqlite3, refuses) is rolled back: its request
    /// gets the error, nothing of it is kept, and the next batch commits on
    /// the same connection.
    @Test(.timeLimit(.minutes(1))) func aBatchThatFailsInItsTransactionIsRolledBack() async throws {
        let server = try await TestServer(issuer: try Issuer())
        let name = try KeyName(realm: "default", subject: "ana", purpose: "notes")
        _ = try await server.store.current(name)
        try server.execute("CREATE TRIGGER refuse BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'refused'); END;")
        await #expect(throws: (any Error).self) { try await server.store.current(name) }
        try server.execute("DROP TRIGGER refuse;")
        #expect(try await server.store.current(name).version == 1)
        let history = try await server.store.auditHistory(realm: "default", subject: "ana")
        #expect(history.map(\.action) == ["create", "release", "release"])
        #expect(try await server.store.verifyAudit().broken == nil)
    }
}
#endif
