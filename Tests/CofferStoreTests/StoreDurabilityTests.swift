import Foundation
import GRDB
import Testing

@testable import CofferStore

/// docs/store.md states the SQLite store's durability; this holds it to
/// that statement, should GRDB's setting or the store's change.
@Suite struct StoreDurabilityTests {
    /// `synchronous = NORMAL` (1) on the writer: a commit survives any
    /// process's crash and is synced by the next checkpoint.
    @Test func theWriterSyncsAtCheckpoints() throws {
        let folder = try RecordStoreTests.Folder()
        let backend = try SQLiteBackend(path: folder.database)
        let level = try backend.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(level == 1)
        let mode = try backend.pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(mode == "wal")
    }
}
