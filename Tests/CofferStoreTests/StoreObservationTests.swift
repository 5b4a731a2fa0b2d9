import Coffer
import Foundation
import Testing

@testable import CofferStore

/// Live queries: results at once, then after every commit that changes
/// them, from this process, another `coffer` process on the same file,
/// and another store handle on PostgreSQL; cancelling or closing ends them
/// and frees their connection.
@Suite(.serialized) struct StoreObservationTests {
    typealias Backend = StoreQueryTests.Backend

    /// The `coffer` tool built beside this test bundle.
    static let coffer: URL = {
        let beside = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("coffer")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/coffer")
    }()

    /// The next element. No timer races it: on two cores, other suites'
    /// synchronous tests may hold the cooperative threads for a while, and
    /// a timer would fire first though the element came in time; a hang is
    /// the run's time limit's to stop (scripts/with-time-limit).
    static func next<S: AsyncIteratorProtocol>(_ iterator: inout S) async throws -> S.Element? {
        try await iterator.next()
    }

    static func to(_ records: [StoreRecord]) -> [String] { records.compactMap { $0["to"]?.textValue } }

    @Test(arguments: Backend.allCases) func resultsComeAtOnceThenAfterEachChangingCommit(_ backend: Backend)
        async throws
    {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let store = try StoreQueryTests.store(try RecordStoreTests.schema(), on: backend, in: folder, name: "observe")
        try await store.put(["to": "Ann", "description": "a book"], into: "presents")
        let query = StoreQuery("presents").filter(StoreColumn("to").hasPrefix("A")).order(by: "to")
        var iterator = store.observe(query, period: .milliseconds(200)).makeAsyncIterator()
        #expect(Self.to(try await Self.next(&iterator) ?? []) == ["Ann"])
        // A commit that leaves the results as they were gives nothing; the next one that changes them does.
        try await store.put(["to": "Bob", "description": "a kite"], into: "presents")
        try await Task.sleep(for: .milliseconds(300))
        try await store.put(["to": "Abe", "description": "a pen"], into: "presents")
        #expect(Self.to(try await Self.next(&iterator) ?? []) == ["Abe", "Ann"])
        // A sealed field changed is a change of the results too.
        try await store.write { transaction in
            _ = try transaction.update("presents", id: 1, set: ["description": "two books"])
        }
        let changed = try await Self.next(&iterator) ?? []
        #expect(changed.first { $0["to"] == "Ann" }?["description"] == "two books")
    }

    /// Another process (`coffer store put`) writes the file this process
    /// observes: its commit is seen through SQLite's data_version.
    @Test func anotherProcessesCommitIsSeen() async throws {
        let folder = try RecordStoreTests.Folder()
        let store = try await RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(),
            secret: .password("presents passphrase"), kdf: RecordStoreTests.fast, rollbackGuard: nil)
        try Data("presents passphrase\n".utf8).write(to: URL(fileURLWithPath: folder.path + "/pw"))
        var iterator = store.observe(StoreQuery("presents")).makeAsyncIterator()
        #expect(try await Self.next(&iterator)?.isEmpty == true)
        let put = Process()
        put.executableURL = Self.coffer
        put.arguments = [
            "store", "put", "--db", folder.database, "--passphrase-file", folder.path + "/pw", "--table", "presents",
        ]
        let input = Pipe()
        put.standardInput = input
        put.standardOutput = FileHandle.nullDevice
        try put.run()
        input.fileHandleForWriting.write(Data(#"{"to": "Eve", "description": "from elsewhere"}"#.utf8))
        try input.fileHandleForWriting.close()
        put.waitUntilExit()
        try #require(put.terminationStatus == 0)
        let seen = try await Self.next(&iterator) ?? []
        #expect(seen.map { $0["description"] } == ["from elsewhere"])
    }

    /// The descriptors this process holds on `path` (the store's file).
    static func descriptors(on path: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path
        }
        .count
    }

    /// Cancelling the iterating task ends the sequence and closes the
    /// observation's own connection (SQLite keeps the descriptor of a
    /// connection closed while others of the process hold locks on the file
    /// and gives it to the next one it opens: so the count of descriptors
    /// stays put over many observations); closing the store ends it too.
    @Test func cancellingOrClosingEndsItAndFreesItsConnection() async throws {
        let folder = try RecordStoreTests.Folder()
        let store = try await RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(),
            secret: .password("presents passphrase"), kdf: RecordStoreTests.fast, rollbackGuard: nil)
        _ = try await store.fetchAll(StoreQuery("presents"))
        let before = Self.descriptors(on: folder.database)
        let started = Locked(false)
        let task = Task {
            var count = 0
            for try await _ in store.observe(StoreQuery("presents")) {
                count += 1
                started.withLock { $0 = true }
            }
            return count
        }
        while !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(Self.descriptors(on: folder.database) == before + 1)
        #expect(SQLiteChangeWatcher.open.withLock { $0 } >= 1)
        task.cancel()
        #expect(try await task.value == 1)
        for _ in 0..<20 {
            let again = Task { for try await _ in store.observe(StoreQuery("presents")) { break } }
            try await again.value
        }
        // An ended observation hands its connection back as its task winds
        // down: given up to 2 s (a slow machine, ThreadSanitizer), a leak
        // still shows.
        var open = Self.descriptors(on: folder.database)
        for _ in 0..<100 where open > before + 1 || SQLiteChangeWatcher.open.withLock({ $0 }) != 0 {
            try await Task.sleep(for: .milliseconds(20))
            open = Self.descriptors(on: folder.database)
        }
        #expect(open <= before + 1)
        #expect(SQLiteChangeWatcher.open.withLock { $0 } == 0)  // this suite's tests run one at a time

        let closing = Task {
            var count = 0
            for try await _ in store.observe(StoreQuery("presents")) { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(200))
        try store.close()
        #expect(try await closing.value == 1)
    }

    struct Present: SealedRecord, Equatable {
        static let storeTable = "presents"
        var id: Int64?
        var to: String
        var description: String?
    }

    @Test func typedRecordsAreObservedAndAnotherTablesQueryIsRefused() async throws {
        let folder = try RecordStoreTests.Folder()
        let store = try await RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(),
            secret: .password("presents passphrase"), kdf: RecordStoreTests.fast, rollbackGuard: nil)
        var iterator = store.observe(Present.self, Present.query.order(by: "to")).makeAsyncIterator()
        #expect(try await Self.next(&iterator) == [])
        let kite = try await store.put(Present(id: nil, to: "Sam", description: "a kite"))
        #expect(try await Self.next(&iterator) == [kite])
        var wrong = store.observe(Present.self, StoreQuery("elsewhere")).makeAsyncIterator()
        await #expect(throws: CofferError.self) { _ = try await wrong.next() }
    }
}

#if Server
import CofferStorePostgres

extension StoreObservationTests {
    /// Another server's handle on the same PostgreSQL store commits: the
    /// observation's next run of its query, within its period, shows it.
    @Test(.enabled(if: PostgresStoreTests.available)) func anotherServersCommitIsSeenOnPostgres() async throws {
        let namespace = "observe_" + String(UUID().uuidString.prefix(8)).lowercased()
        let store = try PostgresStoreTests.store(try RecordStoreTests.schema(), in: namespace)
        let other = try RecordStore.open(
            postgres: try PostgresStoreTests.url(namespace), password: try #require(PostgresStoreTests.server).password,
            secret: RecordStoreTests.passphrase, rollbackGuard: nil)
        var iterator = store.observe(StoreQuery("presents"), period: .milliseconds(200)).makeAsyncIterator()
        #expect(try await Self.next(&iterator)?.isEmpty == true)
        let started = ContinuousClock.now
        try await other.put(["to": "Ann", "description": "from the other server"], into: "presents")
        #expect(try await Self.next(&iterator)?.first?["description"] == "from the other server")
        #expect(ContinuousClock.now - started < .seconds(5))
        try other.close()
        try store.close()
    }
}
#endif
