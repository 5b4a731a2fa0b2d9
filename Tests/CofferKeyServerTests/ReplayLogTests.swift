#if Server
import Coffer
import Foundation
import GRDB
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// SQLite's DPoP replay cache (`SpentProofs`): a log in the file and a set
/// in each store's memory. Two stores on one file are what two processes
/// on one machine are: separate connections, one write lock.
@Suite struct ReplayLogTests {
    static func proof(_ byte: UInt8, expires: Int64) -> ProofUse {
        ProofUse(hash: Data(repeating: byte, count: 32), expires: expires)
    }

    static func release(_ store: ServerKeyStore, _ name: KeyName, _ proofs: [ProofUse]) async throws -> [String?] {
        try await store.rows.release(
            proofs.map { ReleaseRequest(name: name, version: nil, proof: $0) }, now: store.now()
        ).map(ReleaseBatchTests.code)
    }

    static let name = try! KeyName(realm: "default", subject: "ana", purpose: "notes")

    /// A store on SQLite whose key is made and whose first proof (byte 1)
    /// is spent; with its folder, the database's path and the time.
    static func storeWithASpentProof() async throws -> (ServerKeyStore, URL, String, Int64) {
        let (store, folder) = try await ReleaseBatchTests.store(.sqlite)
        _ = try await store.current(name)
        let now = store.now()
        #expect(try await release(store, name, [proof(1, expires: now + 120)]) == [nil])
        return (store, folder, folder.appendingPathComponent("keys.sqlite").path, now)
    }

    /// A proof spent at one store is a replay at the other, also when the
    /// two race for it, and at a store opened on the file afterwards (a
    /// restart), which reads the log.
    @Test func aProofSpentByOneStoreIsAReplayAtAnotherOnTheSameFile() async throws {
        let (a, folder) = try await ReleaseBatchTests.store(.sqlite)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("keys.sqlite").path
        let b = try ServerKeyStore(path: path, kek: a.kek)
        _ = try await a.current(Self.name)
        let now = a.now()
        let (p, q, r) = (
            Self.proof(1, expires: now + 120), Self.proof(2, expires: now + 120), Self.proof(3, expires: now + 120)
        )
        #expect(try await Self.release(a, Self.name, [p]) == [nil])
        #expect(try await Self.release(b, Self.name, [p, q]) == ["dpop-proof-replayed", nil])
        #expect(try await Self.release(a, Self.name, [q]) == ["dpop-proof-replayed"])
        // One proof in 16 releases at once, 8 at each store: one spends it.
        let codes = try await withThrowingTaskGroup(of: [String?].self) { group in
            for copy in 0..<16 { group.addTask { try await Self.release(copy % 2 == 0 ? a : b, Self.name, [r]) } }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(codes.filter { $0 == nil }.count == 1, "\(codes)")
        #expect(codes.filter { $0 == "dpop-proof-replayed" }.count == 15, "\(codes)")
        let c = try ServerKeyStore(path: path, kek: a.kek)
        #expect(
            try await Self.release(c, Self.name, [p, q, r, Self.proof(4, expires: now + 120)])
                == ["dpop-proof-replayed", "dpop-proof-replayed", "dpop-proof-replayed", nil])
        #expect(try KeyServerTests.rowCount(path, "SELECT count(*) FROM dpop_log") == 4)
        for store in [a, b, c] { await store.close() }
    }

    /// A database from before the log keeps its spent proofs: the
    /// migration moves them (written here with python's sqlite3) into it.
    @Test func theSpentProofsOfAnOlderDatabaseStaySpent() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-replay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("keys.sqlite").path
        do {
            let pool = try SQLiteKeyRows.openPool(path)
            try SQLiteKeyRows.migrator.migrate(pool, upTo: "v5 audit anchors")
        }
        let now = Int64(Date().timeIntervalSince1970)
        let spent = "X'" + String(repeating: "01", count: 32) + "'"
        #expect(
            try KeyServerTests.rowCount(
                path, "INSERT INTO dpop_proofs (hash, expires) VALUES (\(spent), \(now + 120)) RETURNING expires")
                == now + 120)
        let store = try ServerKeyStore(path: path, kek: KeyRing())
        _ = try await store.current(Self.name)
        #expect(
            try await Self.release(
                store, Self.name, [Self.proof(1, expires: now + 120), Self.proof(2, expires: now + 120)])
                == ["dpop-proof-replayed", nil])
        #expect(try KeyServerTests.rowCount(path, "SELECT count(*) FROM sqlite_master WHERE name = 'dpop_proofs'") == 0)
        await store.close()
    }

    /// A log row someone shortened with sqlite3 is a database error for the
    /// next release with a proof and for a store opening on the file — not
    /// a crash, and no proof taken as new; releases without a proof go on,
    /// and once the row is gone so do those with one.
    @Test func aMalformedLogRowIsADatabaseError() async throws {
        let (store, folder, path, now) = try await Self.storeWithASpentProof()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bad = try KeyServerTests.rowCount(
            path, "INSERT INTO dpop_log (hash, expires) VALUES (X'0102', \(now + 120)) RETURNING seq")
        do {
            _ = try await Self.release(store, Self.name, [Self.proof(2, expires: now + 120)])
            Issue.record("a release read a malformed log row")
        } catch let error as KeyServerError {
            #expect(error.code == .databaseError)
        }
        #expect(
            try await store.rows.release([ReleaseRequest(name: Self.name, version: nil, proof: nil)], now: now)
                .map(ReleaseBatchTests.code) == [nil])
        // A store opening on the file reads the log: it refuses to open.
        do {
            _ = try ServerKeyStore(path: path, kek: store.kek)
            Issue.record("a store opened over a malformed log row")
        } catch let error as KeyServerError {
            #expect(error.code == .databaseError)
        }
        #expect(try KeyServerTests.rowCount(path, "DELETE FROM dpop_log WHERE seq = \(bad) RETURNING seq") == bad)
        #expect(
            try await Self.release(
                store, Self.name, [Self.proof(1, expires: now + 120), Self.proof(2, expires: now + 120)])
                == ["dpop-proof-replayed", nil])
        await store.close()
    }

    /// The log rebuilt without its types by python's sqlite3, and a row
    /// whose expiry is text: a release with a proof, and a store opening
    /// on the file, are refused as `database-error`, not a crash or an
    /// internal error.
    @Test func aLogRowOfTheWrongTypeIsADatabaseError() async throws {
        let (store, folder, path, now) = try await Self.storeWithASpentProof()
        defer { try? FileManager.default.removeItem(at: folder) }
        for statement in [
            "ALTER TABLE dpop_log RENAME TO dpop_typed",
            "CREATE TABLE dpop_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, hash BLOB NOT NULL, expires NOT NULL)",
            "INSERT INTO dpop_log SELECT * FROM dpop_typed", "DROP TABLE dpop_typed",
        ] {
            _ = try KeyServerTests.rowCount(path, statement)
        }
        let hash = String(repeating: "ab", count: 32)
        #expect(
            try KeyServerTests.rowCount(
                path, "INSERT INTO dpop_log (hash, expires) VALUES (X'\(hash)', 'soon') RETURNING seq") >= 2)
        do {
            _ = try await Self.release(store, Self.name, [Self.proof(2, expires: now + 120)])
            Issue.record("a release read a log row whose expiry is text")
        } catch let error as KeyServerError {
            #expect(error.code == .databaseError)
        }
        do {
            _ = try ServerKeyStore(path: path, kek: store.kek)
            Issue.record("a store opened over a log row whose expiry is text")
        } catch let error as KeyServerError {
            #expect(error.code == .databaseError)
        }
        await store.close()
    }
}
#endif
