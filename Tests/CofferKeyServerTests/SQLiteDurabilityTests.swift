import Foundation
import GRDB
import Testing

@testable import CofferKeyServer

/// A key the server has answered must outlive an OS crash or a power cut,
/// not only a `kill -9` of the server: the client encrypts under it at once.
@Suite struct SQLiteDurabilityTests {
    /// GRDB sets `synchronous = NORMAL` on a WAL database's writer after
    /// the configuration's own statements have run. At NORMAL a commit
    /// is synced only by the next checkpoint; the server's writer must be
    /// at FULL (2), which syncs the WAL in every commit.
    @Test func theWriterSyncsEveryCommit() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let rows = try SQLiteKeyRows(path: folder.appendingPathComponent("keys.sqlite").path)
        let level = try rows.pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(level == 2)
        // A write transaction runs on the same connection, at the same level.
        let inTransaction = try rows.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(inTransaction == 2)
    }
}
