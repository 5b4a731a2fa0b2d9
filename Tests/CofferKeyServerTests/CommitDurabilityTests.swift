#if Server
import Foundation
import GRDB
import PostgresNIO
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// A key the server has answered must outlive an OS crash, a power cut or
/// a crash of PostgreSQL, not only a `kill -9` of the server: the client
/// encrypts under it at once.
@Suite struct CommitDurabilityTests {
    /// GRDB sets `synchronous = NORMAL` on a WAL database's writer after
    /// the configuration's own statements have run. At NORMAL a commit
    /// is synced only by the next checkpoint; the server's writer must be
    /// at FULL (2), which syncs the WAL in every commit.
    @Test func theSQLiteWriterSyncsEveryCommit() async throws {
        let (store, folder) = try await ReleaseBatchTests.store(.sqlite)
        defer { try? FileManager.default.removeItem(at: folder) }
        let rows = try #require(store.rows as? SQLiteKeyRows)
        let read = { (db: Database) in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        let level = try rows.pool.writeWithoutTransaction(read)
        #expect(level == 2)
        // A write transaction runs on the same connection, at the same level.
        let inTransaction = try rows.pool.write(read)
        #expect(inTransaction == 2)
        await store.close()
    }

    /// A database whose owner set `synchronous_commit = off` for every
    /// session (under which a crash of PostgreSQL may lose the last commits)
    /// does not lower the server's sessions: they commit at `on`.
    @Test func postgresSessionsWaitForTheFlushWhateverTheDatabaseSays() async throws {
        let url = try TestPostgres.freshURL()
        let name = String(URLComponents(string: url)!.path.dropFirst())
        _ = try TestPostgres.value(url, "ALTER DATABASE \(name) SET synchronous_commit = off")
        defer { _ = try? TestPostgres.value(url, "ALTER DATABASE \(name) RESET synchronous_commit") }
        // A session of psql's takes the database's setting…
        #expect(try TestPostgres.value(url, "SHOW synchronous_commit") == "off")
        // …and the server's do not.
        let database = try PostgresDatabase(url: url, password: try TestPostgres.server().password)
        let level = try await database.query("SHOW synchronous_commit") { rows in
            var value = ""
            for try await text in rows.decode(String.self) { value = text }
            return value
        }
        await database.close()
        #expect(level == "on")
    }
}
#endif
