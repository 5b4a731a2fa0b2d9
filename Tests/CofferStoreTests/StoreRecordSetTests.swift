import Coffer
import Foundation
import GRDB
import Testing

@testable import CofferStore

/// The record-set digest kept by every writer (docs/store.md, "The record
/// set"): writers side by side, a job beside them, and a store made before
/// the digest; `verify` checks the rows against it.
@Suite struct StoreRecordSetTests {
    static func present(_ number: Int, from worker: Int) -> StoreRecord {
        [
            "to": .text("w\(worker)"), "description": .text("present \(number) of \(worker)"),
            "email": .text("p\(number)w\(worker)@example.com"),
        ]
    }

    /// Four writers put, update and delete at once while a key rotation
    /// rewrites every row; then every record is counted once and every
    /// element matches. On PostgreSQL the writers take different shards.
    @Test(arguments: StoreQueryTests.Backend.allCases) func writersSideBySideAndAJobKeepTheDigest(
        _ backend: StoreQueryTests.Backend
    ) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let store = try StoreQueryTests.store(
            try RecordStoreTests.schema(), on: backend, in: folder, name: "set_writers")
        defer { try? store.close() }
        try store.put(contentsOf: (0..<300).map { Self.present($0, from: 9) }, into: "presents")
        let failures = Locked([String]())
        DispatchQueue.concurrentPerform(iterations: 5) { worker in
            do {
                if worker == 4 {
                    try store.rotateKeys(batchSize: 40)
                    return
                }
                var mine: [StoreValue] = []
                for number in 0..<30 {
                    mine.append(try store.put(Self.present(number, from: worker), into: "presents"))
                    if number % 3 == 2 {
                        try store.update("presents", id: mine[number - 1], set: ["description": .text("changed")])
                    }
                    if number % 6 == 5 { try store.delete("presents", id: mine[number - 4]) }
                }
                // Several changes in one transaction, one of them a put undone in it.
                try store.write { tx in
                    let extra = try tx.put(Self.present(99, from: worker), into: "presents")
                    try tx.update("presents", id: extra, set: ["to": .text("moved")])
                    try tx.delete("presents", id: extra)
                    try tx.put(Self.present(98, from: worker), into: "presents")
                }
            } catch { failures.withLock { $0.append("worker \(worker): \(error)") } }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let verification = try store.verify()
        #expect(verification.isIntact, "\(verification.problems)")
        // 300 + 4 × (30 − 5 + 1)
        #expect(verification.rows == 404)
    }

    /// A store written before the digest (made here by taking its digest
    /// away in a change of state, as an older version left it) gets one at
    /// its first open by this version, over the rows as they stand; from
    /// then on a deleted record is caught.
    @Test func aStoreMadeBeforeTheDigestGetsOneAtItsFirstOpen() throws {
        let folder = try RecordStoreTests.Folder()
        var store = try RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast, rollbackGuard: nil)
        try store.put(contentsOf: (0..<50).map { Self.present($0, from: 1) }, into: "presents")
        try store.change { db, state in
            state.recordSet = nil
            try db.execute("DELETE FROM \(StoreSQL.metaTable) WHERE name = ?", [RecordSetDigest.keyName.databaseValue])
            try db.execute("DROP TABLE \(RecordSetDigest.table)")
        }
        try store.close()
        let before = try DatabaseQueue(path: folder.database)
        #expect(try before.read { try $0.tableExists(RecordSetDigest.table) } == false)
        try before.close()

        store = try RecordStore.open(sqlite: folder.database, secret: RecordStoreTests.passphrase, rollbackGuard: nil)
        #expect(try store.verify().isIntact)
        try store.close()
        let database = try DatabaseQueue(path: folder.database)
        #expect(try database.read { try Table(RecordSetDigest.table).fetchCount($0) } == RecordSetDigest.shards)
        try database.write { try $0.execute(sql: "DELETE FROM presents WHERE id = 7") }
        try database.close()
        store = try RecordStore.open(sqlite: folder.database, secret: RecordStoreTests.passphrase, rollbackGuard: nil)
        defer { try? store.close() }
        let verification = try store.verify()
        #expect(verification.problems.contains { $0.contains("1 record fewer") }, "\(verification.problems)")
    }
}
