import Coffer
import CofferStore
import Foundation
import Testing

/// `put(batches:into:committed:)`: each batch in its own transaction, the
/// next one sealed ahead under the state and keys it most likely gets,
/// and sealed again when another writer took those keys or the state
/// moved in between.
@Suite struct StoreBatchImportTests {
    typealias Folder = RecordStoreTests.Folder

    static func batch(_ range: Range<Int>) -> [StoreRecord] {
        range.map { index in
            [
                "to": .text("friend \(index % 7)"), "description": .text("present \(index)"),
                "email": .text("Person\(index)@Example.org "),
            ]
        }
    }

    static func newStore(_ folder: Folder) throws -> RecordStore {
        try RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast)
    }

    /// Reads every record back and checks it is the one put under its key.
    static func expectStored(_ store: RecordStore, _ expected: [StoreValue: Int]) throws {
        for (key, index) in expected {
            let record = try #require(try store.get("presents", id: key))
            #expect(record["description"] == .text("present \(index)"), "\(index)")
            #expect(record["to"] == .text("friend \(index % 7)"))
        }
        for index in [0, expected.count / 2, expected.count - 1] {
            let found = try store.find("presents", where: "email", equals: .text("person\(index)@example.org"))
            #expect(found.count == 1 && found.first?["description"] == .text("present \(index)"), "\(index)")
        }
        #expect(try store.verify().isIntact)
    }

    @Test func batchesAreCommittedInOrderWithTheirKeys() throws {
        let folder = try Folder()
        let store = try Self.newStore(folder)
        var batches = [Self.batch(0..<700), Self.batch(700..<1400), Self.batch(1400..<1500)]
        var seen: [StoreValue: Int] = [:]
        var committed: [Int] = []
        let next = { batches.isEmpty ? nil : batches.removeFirst() }
        try store.put(batches: next, into: "presents") { keys in
            // Each batch is committed when its keys arrive: another handle sees it.
            let other = try RecordStore.open(sqlite: folder.database, secret: RecordStoreTests.passphrase)
            #expect(try other.fetchCount(StoreQuery("presents")) == seen.count + keys.count)
            for key in keys { seen[key] = seen.count }
            committed.append(keys.count)
        }
        #expect(committed == [700, 700, 100])
        #expect(Set(seen.keys).count == 1500)
        try Self.expectStored(store, seen)
    }

    /// Between two batches, another process's writer takes the keys the
    /// next batch was sealed for, then the state moves (a key rotation):
    /// each time the batch is sealed again and every cell opens under its
    /// own key.
    @Test func aBatchSealedAheadIsSealedAgainWhenItsKeysOrTheStateMoved() throws {
        let folder = try Folder()
        let store = try Self.newStore(folder)
        let other = try RecordStore.open(sqlite: folder.database, secret: RecordStoreTests.passphrase)
        var batches = [Self.batch(0..<600), Self.batch(600..<1200), Self.batch(1200..<1800)]
        var seen: [StoreValue: Int] = [:]
        var intruder: StoreValue?
        var round = 0
        let next = { batches.isEmpty ? nil : batches.removeFirst() }
        try store.put(batches: next, into: "presents") { keys in
            for key in keys { seen[key] = seen.count }
            round += 1
            if round == 1 {
                intruder = try other.put(["to": .text("intruder"), "description": .text("first")], into: "presents")
            } else if round == 2 {
                try other.rotateKeys()
            }
        }
        let intruderKey = try #require(intruder)
        #expect(seen[intruderKey] == nil && seen.count == 1800)
        #expect(try store.get("presents", id: intruderKey)?["description"] == .text("first"))
        try Self.expectStored(store, seen)
    }

    /// Between two batches, the sqlite3 tool moves the table's key
    /// sequence on (a database writer without any key): the next batch,
    /// sealed ahead for the keys it would have had, is sealed again for
    /// the keys past the sequence, and every cell opens under its own key.
    @Test func aKeySequenceMovedBySQLiteItselfIsFollowed() throws {
        let folder = try Folder()
        let store = try Self.newStore(folder)
        var batches = [Self.batch(0..<500), Self.batch(500..<1000)]
        var seen: [StoreValue: Int] = [:]
        var firstKeys: [[StoreValue]] = []
        let next = { batches.isEmpty ? nil : batches.removeFirst() }
        try store.put(batches: next, into: "presents") { keys in
            for key in keys { seen[key] = seen.count }
            firstKeys.append(keys)
            if firstKeys.count == 1 {
                let tool = Process()
                tool.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                tool.arguments = [
                    "sqlite3", folder.database, "UPDATE sqlite_sequence SET seq = seq + 1000 WHERE name = 'presents'",
                ]
                try tool.run()
                tool.waitUntilExit()
                try #require(tool.terminationStatus == 0, "sqlite3 (scripts/test installs it) failed")
            }
        }
        #expect(firstKeys.map(\.count) == [500, 500])
        #expect(firstKeys.last?.first == .integer(1501), "keys continue past the moved sequence")
        try Self.expectStored(store, seen)
    }

    /// A bad record in the next batch does not stop the batch before it;
    /// a failure to read stops the load after the batches before it.
    @Test func aFailureStopsTheLoadAfterTheBatchesBeforeIt() throws {
        let folder = try Folder()
        let store = try Self.newStore(folder)
        struct ReadFailure: Error {}
        var batches = [Self.batch(0..<300), [["to": .text("x"), "colour": .text("red")]] + Self.batch(300..<310)]
        var committed = 0
        let next = { batches.isEmpty ? nil : batches.removeFirst() }
        #expect(throws: CofferError.self) {
            try store.put(batches: next, into: "presents") { committed += $0.count }
        }
        #expect(try committed == 300 && store.fetchCount(StoreQuery("presents")) == 300)

        var reads = 0
        #expect(throws: ReadFailure.self) {
            let failing = { () throws -> [StoreRecord]? in
                reads += 1
                if reads == 3 { throw ReadFailure() }
                return Self.batch(1000 * reads..<1000 * reads + 50)
            }
            try store.put(batches: failing, into: "presents") { committed += $0.count }
        }
        #expect(try committed == 400 && store.fetchCount(StoreQuery("presents")) == 400)
    }
}
