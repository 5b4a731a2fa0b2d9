import Coffer
import CofferStore
import Foundation
import GRDB
import Testing

/// After a delete or an update commits, no copy of the old cells stays in
/// the SQLite files: `secure_delete` zeroes them in the database, and the
/// store empties the WAL that still held the page images written before.
@Suite struct StoreResidueTests {
    /// The sealed cell of `field` in row `id`, read with a connection of
    /// the test's own.
    static func cell(_ path: String, _ field: String, id: Int64) throws -> [UInt8] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        let data = try queue.read {
            try Data.fetchOne($0, sql: "SELECT \(field) FROM presents WHERE id = ?", arguments: [id])
        }
        return Array(try #require(data))
    }

    /// The files of the store that hold `needle`.
    static func filesHolding(_ needle: [UInt8], store path: String) throws -> [String] {
        try ["", "-wal", "-shm"].compactMap { suffix in
            guard let bytes = try RecordStoreTests.bytesReadElsewhere(path + suffix) else { return nil }
            return bytes.range(of: Data(needle)) == nil ? nil : suffix.isEmpty ? "database" : suffix
        }
    }

    @Test func deletedAndOverwrittenCellsLeaveNoCopy() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast, rollbackGuard: nil)
        for index in 0..<20 {
            try store.put(["to": "t\(index)", "description": "gift \(index)", "email": "e\(index)"], into: "presents")
        }
        let deleted = try Self.cell(folder.database, "description", id: 3)
        let overwritten = try Self.cell(folder.database, "email", id: 7)
        let overwrittenInTransaction = try Self.cell(folder.database, "description", id: 9)
        let kept = try Self.cell(folder.database, "description", id: 4)
        // The scan sees cells where they are: in the WAL, not checkpointed yet.
        #expect(try Self.filesHolding(deleted, store: folder.database) == ["-wal"])

        #expect(try store.delete("presents", id: 3))
        #expect(try Self.filesHolding(deleted, store: folder.database).isEmpty)
        try store.update("presents", id: 7, set: ["email": "new@example.org"])
        #expect(try Self.filesHolding(overwritten, store: folder.database).isEmpty)
        try store.write { tx in _ = try tx.update("presents", id: 9, set: ["description": "another gift"]) }
        #expect(try Self.filesHolding(overwrittenInTransaction, store: folder.database).isEmpty)
        #expect(try Self.filesHolding(kept, store: folder.database) == ["database"])
        #expect(try store.get("presents", id: 4)?["description"] == "gift 3")
    }
}
