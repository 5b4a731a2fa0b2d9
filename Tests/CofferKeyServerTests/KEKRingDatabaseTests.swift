#if Server
import Coffer
import Foundation
import Testing

/// One KEK ring for every replica (issue 59, part 4): kept in the database
/// (`kek init` on PostgreSQL, `--ring-in-database` on SQLite, `kek
/// move-to-database`), so a rotation
/// on one replica reaches the others with no file to copy, and an older
/// ring put back in the database (with psql) is refused by a replica that
/// saw a newer one. Each replica has a state folder of its own.
@Suite struct KEKRingDatabaseTests {
    // The same helpers as the HSM's tests: a command run to its end, and users' keys.
    static func server(_ arguments: [String], _ environment: [String: String]) throws -> (Int32, String) {
        try HSMTests.server(arguments, environment)
    }

    static func keys(_ server: ServerProcess, _ issuer: Issuer, _ users: [String]) async throws -> [String: String] {
        try await HSMTests.keys(server, issuer, users)
    }

    @Test func tworeplicasOnPostgreSQLShareOneRingAndRefuseAnOlderOnePutBack() async throws {
        let issuer = try Issuer()
        let url = try TestPostgres.freshURL()
        let password = try TestPostgres.server().password
        var replicas: [(data: String, environment: [String: String])] = []
        for name in ["a", "b"] {
            let data = issuer.folder + "/" + name
            try FileManager.default.createDirectory(atPath: data + "-state", withIntermediateDirectories: true)
            replicas.append((data, ["PGPASSWORD": password, "COFFER_STATE_DIR": data + "-state"]))
        }
        let options = { (data: String) in
            ["--data", data, "--kek-passphrase-file", try ServerProcess.passphraseFile(issuer), "--database", url]
        }
        // Both places named at once is an error; PostgreSQL's default is the database.
        var run = try Self.server(
            ["kek", "init", "--ring-in-database", "--ring-in-file"] + options(replicas[0].data),
            replicas[0].environment)
        #expect(run.0 == 64 && run.1.contains("give one of --ring-in-database and --ring-in-file"), "\(run.1)")
        run = try Self.server(["kek", "init"] + options(replicas[0].data), replicas[0].environment)
        #expect(run.0 == 0 && run.1.contains("made the KEK ring in the database"), "\(run.1)")
        #expect(!FileManager.default.fileExists(atPath: replicas[0].data + "/kek.ckr"))
        try FileManager.default.createDirectory(atPath: replicas[1].data, withIntermediateDirectories: true)

        let servers = try replicas.enumerated().map { index, replica in
            try ServerProcess(
                arguments: try ServerProcess.serveArguments(issuer: issuer, data: replica.data) + ["--database", url],
                environment: replica.environment, log: issuer.folder + "/server-\(index).log")
        }
        defer { for server in servers { server.stop() } }
        let users = ["ana", "bo", "cy"]
        let before = try await Self.keys(servers[0], issuer, users)
        #expect(before.values.allSatisfy { !$0.hasPrefix("status") }, "\(before)")
        #expect(try await Self.keys(servers[1], issuer, users) == before)
        let older = try TestPostgres.value(url, "SELECT encode(ring, 'hex') FROM kek_ring")

        // A rotation on replica a: every stored key moves to the new KEK
        // key and the old one is disabled. Replica b, given no file, reads
        // the new ring from the database when a row names its new key.
        run = try Self.server(["kek", "rotate", "--settle", "0"] + options(replicas[0].data), replicas[0].environment)
        #expect(run.0 == 0 && run.1.contains("left under an older KEK key"), "\(run.1)")
        #expect(try await Self.keys(servers[1], issuer, users) == before)
        #expect(try await Self.keys(servers[1], issuer, ["dee"])["dee"]?.hasPrefix("status") == false)
        run = try Self.server(["kek", "list"] + options(replicas[1].data), replicas[1].environment)
        #expect(run.0 == 0 && run.1.split(separator: "\n").filter { $0.contains("disabled") }.count == 1, "\(run.1)")

        // The older ring put back with psql: replica b, which saw the newer
        // one, refuses it ("an older copy was put back"), and nothing opens.
        _ = try TestPostgres.value(url, "UPDATE kek_ring SET ring = decode('\(older)', 'hex') RETURNING 1")
        run = try Self.server(["kek", "list"] + options(replicas[1].data), replicas[1].environment)
        #expect(run.0 != 0 && run.1.contains("an older copy was put back"), "\(run.1)")
        // A kek.ckr beside the database's ring is refused, not silently used.
        run = try Self.server(["kek", "accept-restore"] + options(replicas[1].data), replicas[1].environment)
        #expect(run.0 == 0, "\(run.1)")
        FileManager.default.createFile(
            atPath: replicas[1].data + "/kek.ckr", contents: Data("stale".utf8), attributes: [.posixPermissions: 0o600])
        run = try Self.server(["kek", "list"] + options(replicas[1].data), replicas[1].environment)
        #expect(run.0 != 0 && run.1.contains("the database keeps the KEK ring, and there is also one at"), "\(run.1)")
    }

    @Test(arguments: Backend.allCases) func aRingFileMovesIntoTheDatabaseResumably(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let (database, environment) = try backend.serverOptions()
        let options = ["--data", data, "--kek-passphrase-file", try ServerProcess.passphraseFile(issuer)] + database
        // PostgreSQL's default is the database: the file is asked for.
        var run = try Self.server(["kek", "init", "--ring-in-file"] + options, environment)
        #expect(run.0 == 0 && run.1.contains("made the KEK ring \(data)/kek.ckr"), "\(run.1)")
        let server = try ServerProcess(
            arguments: try ServerProcess.serveArguments(issuer: issuer, data: data) + database,
            environment: environment, log: issuer.folder + "/before.log")
        let before = try await Self.keys(server, issuer, ["ana", "bo"])
        server.stop()

        // As if a first run were killed after its write: the row is there, the file too.
        let ring = try Data(contentsOf: URL(fileURLWithPath: data + "/kek.ckr"))
        run = try Self.server(["kek", "move-to-database"] + options, environment)
        #expect(run.0 == 0 && run.1.contains("moved"), "\(run.1)")
        #expect(!FileManager.default.fileExists(atPath: data + "/kek.ckr"))
        FileManager.default.createFile(
            atPath: data + "/kek.ckr", contents: ring, attributes: [.posixPermissions: 0o600])
        run = try Self.server(["kek", "move-to-database"] + options, environment)
        #expect(run.0 == 0 && !FileManager.default.fileExists(atPath: data + "/kek.ckr"), "\(run.1)")
        run = try Self.server(["kek", "move-to-database"] + options, environment)
        #expect(run.0 == 0 && run.1.contains("nothing to do"), "\(run.1)")

        let after = try ServerProcess(
            arguments: try ServerProcess.serveArguments(issuer: issuer, data: data) + database,
            environment: environment, log: issuer.folder + "/after.log")
        defer { after.stop() }
        #expect(try await Self.keys(after, issuer, ["ana", "bo"]) == before)
    }

    /// `sqlite3` on the database file, the way a writer without the KEK would.
    static func sqlite(_ database: String, _ sql: String) throws -> String {
        let run = try Spawned.run("/usr/bin/sqlite3", [database, sql], errors: .capture)
        guard run.status == 0 else { throw CofferError(.io, "sqlite3: \(run.errorText)") }
        return run.text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The ring in a SQLite file, edited with sqlite3: an older ring put
    /// back after a rotation is refused by the server that saw the newer
    /// one, and a ring with one byte changed opens for no one.
    @Test func aRingInSQLiteEditedWithSqlite3IsRefused() async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let database = data + "/keys.sqlite"
        let options = ["--data", data, "--kek-passphrase-file", try ServerProcess.passphraseFile(issuer)]
        var run = try Self.server(["kek", "init", "--ring-in-database"] + options, [:])
        #expect(run.0 == 0 && run.1.contains("made the KEK ring in the database"), "\(run.1)")
        let server = try ServerProcess(
            arguments: try ServerProcess.serveArguments(issuer: issuer, data: data), log: issuer.folder + "/a.log")
        let before = try await Self.keys(server, issuer, ["ana", "bo"])
        server.stop()
        let older = try Self.sqlite(database, "SELECT hex(ring) FROM kek_ring")
        run = try Self.server(["kek", "rotate", "--settle", "0"] + options, [:])
        #expect(run.0 == 0, "\(run.1)")
        let newer = try Self.sqlite(database, "SELECT hex(ring) FROM kek_ring")
        #expect(newer != older && !older.isEmpty)

        _ = try Self.sqlite(database, "UPDATE kek_ring SET ring = X'\(older)'")
        run = try Self.server(["kek", "list"] + options, [:])
        // Exit statuses by class (docs/key-server.md): 65 for stored data refused.
        #expect(run.0 == 65 && run.1.contains("an older copy was put back"), "\(run.0) \(run.1)")

        // One byte of the newer ring changed, near its end (its sealed keys).
        var flipped = Array(newer)
        let at = flipped.count - 10
        flipped[at] = flipped[at] == "0" ? "1" : "0"
        _ = try Self.sqlite(database, "UPDATE kek_ring SET ring = X'\(String(flipped))'")
        run = try Self.server(["kek", "list"] + options, [:])
        #expect(run.0 == 65 && run.1.contains("its sealed body does not open"), "\(run.0) \(run.1)")
        // 77 for a secret that opens nothing; 69 for a database that does not answer.
        let wrong = issuer.folder + "/wrong-passphrase"
        FileManager.default.createFile(
            atPath: wrong, contents: Data("not the passphrase\n".utf8), attributes: [.posixPermissions: 0o600])
        run = try Self.server(["kek", "list", "--data", data, "--kek-passphrase-file", wrong], [:])
        #expect(run.0 == 77 && run.1.contains("wrong password"), "\(run.0) \(run.1)")
        run = try Self.server(
            ["kek", "list", "--database", "postgres://nobody@127.0.0.1:1/none"] + options, ["PGPASSWORD": "x"])
        #expect(run.0 == 69 && run.1.contains("cannot connect to the key server's database"), "\(run.0) \(run.1)")
        let refusal = run.1
        // The newer ring as it was: everything opens again, keys as before.
        _ = try Self.sqlite(database, "UPDATE kek_ring SET ring = X'\(newer)'")
        run = try Self.server(["kek", "list"] + options, [:])
        #expect(run.0 == 0, "after \(refusal): \(run.1)")
        let after = try ServerProcess(
            arguments: try ServerProcess.serveArguments(issuer: issuer, data: data), log: issuer.folder + "/b.log")
        defer { after.stop() }
        #expect(try await Self.keys(after, issuer, ["ana", "bo"]) == before)
    }
}
#endif
