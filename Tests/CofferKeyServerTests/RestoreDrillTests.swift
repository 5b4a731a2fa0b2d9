#if Server
import Coffer
import Foundation
import Testing

/// The restore of docs/key-server-operating.md ("Deploying"), walked as an
/// operator walks it, on SQLite and PostgreSQL: back up the database and
/// the KEK ring, rotate the KEK, restore the database from before the
/// rotation (its rows sealed under a key the rotation disabled), `kek
/// list`, `kek enable`, `kek rewrap`: every user's key answers as before,
/// and the key that sealed the backup is disabled again.
@Suite struct RestoreDrillTests {
    static let users = ["ana", "bo", "cy"]

    /// `coffer-server ARGUMENTS` to its end: status and what it printed.
    static func server(_ arguments: [String], _ environment: [String: String]) throws -> (Int32, String) {
        let run = try Spawned.run(
            ServerProcess.binary.path, arguments, environment: environment, output: .capture, errors: .capture)
        return (run.status, run.text + run.errorText)
    }

    /// Each user's key for notes, fetched from a server started over the data.
    static func keys(_ issuer: Issuer, _ data: String, _ options: [String], _ environment: [String: String])
        async throws -> [String: String]
    {
        let log = issuer.folder + "/server-\(UUID().uuidString.prefix(8)).log"
        let server: ServerProcess
        do {
            server = try ServerProcess(issuer: issuer, data: data, log: log, extra: options, environment: environment)
        } catch {
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw CofferError(.io, "coffer-server did not start: \(said)")
        }
        defer { server.stop() }
        var keys: [String: String] = [:]
        for user in users {
            let (status, body) = try await server.address.request("/v1/keys/notes", token: try issuer.token(user))
            keys[user] = status == 200 ? body["key"] as? String : "status \(status)"
        }
        return keys
    }

    /// Where the drill keeps its rows and its KEK ring.
    enum Place: String, CaseIterable, CustomTestStringConvertible {
        /// SQLite with DIR/kek.ckr; PostgreSQL with DIR/kek.ckr (`kek init
        /// --ring-in-file`); PostgreSQL with the ring in the database, its
        /// default, restored with the dump.
        case sqlite, postgresRingFile, postgres
        var testDescription: String { rawValue }
        var backend: Backend { self == .sqlite ? .sqlite : .postgres }
    }

    @Test(arguments: Place.allCases) func theDocumentedRestoreAnswersEveryUsersKeyAsBefore(_ place: Place)
        async throws
    {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let (options, environment) = try place.backend.serverOptions()
        let kek = ["--data", data, "--kek-passphrase-file", try ServerProcess.passphraseFile(issuer)] + options
        var run = try Self.server(
            ["kek", "init"] + (place == .postgresRingFile ? ["--ring-in-file"] : []) + kek, environment)
        #expect(run.0 == 0 && run.1.contains(place == .postgres ? "in the database" : "/kek.ckr"), "\(run.1)")
        let before = try await Self.keys(issuer, data, options, environment)
        #expect(before.values.allSatisfy { !$0.hasPrefix("status") }, "\(before)")

        // Back up with coffer-server backup: the database and the KEK ring,
        // checked by opening them.
        let backup = issuer.folder + "/backup"
        let database = data + "/keys.sqlite"
        run = try Self.server(["backup", "--to", backup] + kek, environment)
        #expect(run.0 == 0 && run.1.contains("verified"), "\(run.1)")

        // Rotate the KEK: the rows move to the new key, the old one is disabled.
        run = try Self.server(["kek", "rotate", "--settle", "0"] + kek, environment)
        #expect(run.0 == 0, "\(run.1)")
        run = try Self.server(["kek", "list"] + kek, environment)
        let disabled = run.1.split(separator: "\n").first { $0.contains("disabled") && $0.contains(" 3 stored keys") }
        #expect(disabled == nil, "the rotation left keys under the old KEK key: \(run.1)")

        // Restore the database from before the rotation (the backup
        // verified first); a ring in a file stays the current one.
        run = try Self.server(["backup", "verify", backup] + kek, environment)
        #expect(run.0 == 0, "\(run.1)")
        switch place.backend {
        case .sqlite:
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
            try FileManager.default.removeItem(atPath: database)
            // As the docs say: the copy closed to others, or the server refuses it.
            let copy = try Spawned.run("/usr/bin/install", ["-m", "600", backup + "/keys.sqlite", database])
            #expect(copy.status == 0)
        case .postgres:
            let url = options[1]
            _ = try TestPostgres.value(url, "DROP SCHEMA \(TestPostgres.schema(of: url)!) CASCADE")
            try TestPostgres.tool(
                "pg_restore", url, ["-d", String(URL(string: url)!.path.dropFirst()), backup + "/keys.dump"])
        }
        if place == .postgres {
            // The dump brought back the ring from before the rotation too:
            // older than the one this host saw, so refused until accepted.
            // It has the key that sealed the rows, as their primary.
            run = try Self.server(["kek", "list"] + kek, environment)
            #expect(run.0 == 65 && run.1.contains("an older copy was put back"), "\(run.0) \(run.1)")
            run = try Self.server(["kek", "accept-restore"] + kek, environment)
            #expect(run.0 == 0, "\(run.1)")
            run = try Self.server(["kek", "list"] + kek, environment)
            #expect(
                run.1.contains("primary") && run.1.contains("3 stored keys") && !run.1.contains("disabled"), "\(run.1)")
        } else {
            let unreadable = try await Self.keys(issuer, data, options, environment)
            #expect(unreadable.values.allSatisfy { $0 == "status 500" }, "\(unreadable)")

            // kek list names the disabled key that sealed the restored rows; enable it, rewrap.
            run = try Self.server(["kek", "list"] + kek, environment)
            let line = run.1.split(separator: "\n").first { $0.contains("disabled") && $0.contains("3 stored keys") }
            let id = try #require(line.map { String($0.prefix { $0 != " " }) }, "\(run.1)")
            run = try Self.server(["kek", "enable", id] + kek, environment)
            #expect(run.0 == 0 && run.1.contains("enabled KEK key \(id)"), "\(run.1)")
            run = try Self.server(["kek", "rewrap", "--settle", "0"] + kek, environment)
            #expect(run.0 == 0 && run.1.contains("resealed 3 keys; 0 left under an older KEK key"), "\(run.1)")
            run = try Self.server(["kek", "list"] + kek, environment)
            #expect(run.1.contains("\(id)  disabled"), "\(run.1)")
        }

        // Every user's key answers as before.
        let after = try await Self.keys(issuer, data, options, environment)
        #expect(after == before)
    }
}
#endif
