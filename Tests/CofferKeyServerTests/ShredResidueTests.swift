#if Server
import Coffer
import Foundation
import GRDB
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// After a shred's sweep, the subject's wrapped keys are in neither the
/// SQLite database nor its WAL (security review 3, G8, whose reproduction
/// found them twice in the WAL). The files are read as bytes, and the keys
/// looked up beforehand with the sqlite3 tool, not through the server.
@Suite struct ShredResidueTests {
    /// How many times `needle` appears in the file at `path` (0 if there is
    /// no file), read by another process: this one must not open the live
    /// database itself, since closing any descriptor of a file drops every
    /// POSIX lock the process holds on it, the server's included, and then
    /// the next SQLite connection of another process to close takes the
    /// database for its own and removes the WAL from under the server.
    static func occurrences(of needle: Data, in path: String) throws -> Int {
        let script = """
            import os, sys
            data = open(sys.argv[1], "rb").read() if os.path.exists(sys.argv[1]) else b""
            needle = bytes.fromhex(sys.argv[2])
            print(data.count(needle) if needle else 0)
            """
        let hex = needle.map { String(format: "%02x", $0) }.joined()
        let run = try Spawned.run("/usr/bin/env", ["python3", "-c", script, path, hex])
        guard run.status == 0, let count = Int(run.text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw CofferError(.io, "python could not read \(path)")
        }
        return count
    }

    static func wrappedKeys(_ database: String, subject: String) throws -> [Data] {
        let run = try Spawned.run(
            "/usr/bin/sqlite3", [database, "SELECT hex(wrapped) FROM keys WHERE subject = '\(subject)'"])
        #expect(run.status == 0)
        return run.text.split(separator: "\n").map { hex in
            Data(
                stride(from: 0, to: hex.count, by: 2).map { offset -> UInt8 in
                    let start = hex.index(hex.startIndex, offsetBy: offset)
                    return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
                })
        }
    }

    @Test func aSweptSubjectsKeysAreInNeitherTheDatabaseNorItsWAL() async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: .sqlite)
        let admin = try await server.store.addOperator(name: "ops", scopes: [.shred])
        let (alice, bob) = (try issuer.token("alice"), try issuer.token("bob"))
        let files = [server.database, server.database + "-wal"]
        try await server.run { client in
            // A reader on an early snapshot (as a backup or an audit export
            // would be) keeps SQLite from starting the WAL over, so that
            // the keys below are written deep into it, past what the
            // twenty commits after the shred overwrite once it restarts.
            var configuration = Configuration()
            configuration.allowsUnsafeTransactions = true  // held open across accesses, on purpose
            let reader = try DatabaseQueue(path: server.database, configuration: configuration)
            try await reader.writeWithoutTransaction { db in
                try db.beginTransaction(.deferred)
                _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM audit")
            }
            for _ in 0..<100 {
                #expect(
                    try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(bob)).status == .ok)
            }
            for purpose in ["notes", "photos", "mail"] {
                let response = try await client.execute(
                    uri: "/v1/keys/\(purpose)", method: .post, headers: bearer(alice))
                #expect(response.status == .ok)
            }
            try await reader.writeWithoutTransaction { db in try db.commit() }
            try reader.close()
            let keys = try Self.wrappedKeys(server.database, subject: "alice")
            #expect(keys.count == 3)
            // The scan finds them while they are stored.
            for key in keys { #expect(try files.map { try Self.occurrences(of: key, in: $0) }.reduce(0, +) > 0) }

            let shred = try await client.execute(
                uri: "/v1/admin/subjects/shred", method: .post, headers: bearer(admin),
                body: try body(["subject": "alice", "undoWindowSeconds": 0]))
            #expect(shred.status == .ok)
            // With no undo window the shred sweeps before it answers.
            #expect(try Self.wrappedKeys(server.database, subject: "alice").isEmpty)
            // The server goes on writing after the sweep.
            for _ in 0..<20 {
                #expect(
                    try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(bob)).status == .ok)
            }
            for key in keys {
                for file in files {
                    #expect(try Self.occurrences(of: key, in: file) == 0, "\(file)")
                }
            }
            #expect(try Self.wrappedKeys(server.database, subject: "bob").count == 1)
        }
    }
}
#endif
