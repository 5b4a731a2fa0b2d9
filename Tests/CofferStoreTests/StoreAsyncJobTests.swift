import Coffer
import CofferStore
import Foundation
import Testing

/// The async jobs: they run to the same end as the blocking ones, and a
/// cancelled task stops its job after a committed batch, to be resumed.
@Suite struct StoreAsyncJobTests {
    @Test func cancelledJobsResume() async throws {
        let folder = try RecordStoreTests.Folder()
        let store = try StoreJobTests.filled(folder, rows: 200)
        // The first batch's progress waits until the task has been
        // cancelled, so the job cannot finish first however slow the
        // machine; the next batch sees the cancellation and stops.
        let started = AsyncStream<Void>.makeStream()
        let cancelRequested = Locked(false)
        let rotation = Task {
            try await store.rotateKeys(batchSize: 10) { _ in
                started.continuation.yield()
                let deadline = Date().addingTimeInterval(60)
                while !cancelRequested.withLock({ $0 }) && Date() < deadline {
                    Thread.sleep(forTimeInterval: 0.005)
                }
            }
        }
        for await _ in started.stream { break }
        rotation.cancel()
        cancelRequested.withLock { $0 = true }
        await #expect(throws: CancellationError.self) { try await rotation.value }
        #expect(try await store.pendingJob()?.kind == .rotate)
        let report = try await store.rotateKeys(batchSize: 50)
        #expect(report.resumed && report.rows == 200 && report.changed == 400, "\(report)")
        #expect(try await store.pendingJob() == nil)

        let reindexed = try await store.reindex()
        #expect(reindexed.rows == 200 && !reindexed.resumed)
        #expect(try await store.find("presents", where: "email", equals: .text("U3@x.org")).count == 29)
        let plan = try await store.plan("presents", field: "email")
        #expect(plan.estimatedDistinct == 7)
        #expect(try await store.verify().isIntact)
    }

    @Test func asyncMigration() async throws {
        let folder = try RecordStoreTests.Folder()
        let schema = try StoreSchema(tables: [
            .init(
                name: "notes", primaryKey: "id",
                fields: [.init(name: "id", type: .integer), .init(name: "tag", type: .text)])
        ])
        let store = try await RecordStore.create(
            sqlite: folder.database, schema: schema, secret: RecordStoreTests.passphrase, kdf: RecordStoreTests.fast)
        for index in 0..<30 { try await store.put(["tag": .text("t\(index % 3)")], into: "notes") }
        let steps = Locked<[Int]>([])
        let report = try await store.migrate(
            "notes", field: "tag", indexes: [.init(name: "tag_exact", bits: 4)], batchSize: 10
        ) { progress in steps.withLock { $0.append(progress.done) } }
        #expect(report.rows == 30 && report.changed == 60)
        #expect(steps.withLock { $0 } == [10, 20, 30])
        #expect(try await store.find("notes", where: "tag", equals: .text("t1")).count == 10)
    }
}
