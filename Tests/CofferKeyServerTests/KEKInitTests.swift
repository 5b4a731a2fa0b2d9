#if Server
import Foundation
import Testing

/// Operator trial 4: a replica whose `--config` misspelt its database made
/// a new local database with a new KEK ring, even for `operator list`, and
/// served other key bytes under the same key id. Now only `kek init` (and
/// `serve --dev`) makes a KEK ring or a database; every other command
/// refuses a missing one and makes nothing.
@Suite struct KEKInitTests {
    /// Runs `coffer-server` with `arguments`: status and everything it said.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
        let run = try Spawned.run(
            ServerProcess.binary.path, arguments, environment: environment, errors: .capture, mergeErrors: true)
        return (run.status, run.text)
    }

    @Test(arguments: Backend.allCases) func onlyKEKInitMakesARingOrADatabase(_ backend: Backend) throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let (database, environment) = try backend.serverOptions()
        let options = ["--data", data, "--kek-passphrase-file", try ServerProcess.passphraseFile(issuer)] + database
        let nothing = { (what: String) in
            #expect(!FileManager.default.fileExists(atPath: data + "/kek.ckr"), "\(what) made a KEK ring")
            #expect(!FileManager.default.fileExists(atPath: data + "/keys.sqlite"), "\(what) made a database")
        }
        for command in [
            ["operator", "list"], ["kek", "list"], ["audit", "verify"], ["kek", "rewrap", "--settle", "0"],
        ] {
            let (status, said) = try Self.run(command + options, environment: environment)
            #expect(status != 0 && said.contains("there is no KEK ring at") && said.contains("kek init"), "\(said)")
            nothing(command.joined(separator: " "))
        }
        let serve = try ServerProcess.serveArguments(issuer: issuer, data: data) + database
        var (status, said) = try Self.run(serve, environment: environment)
        #expect(status != 0 && said.contains("coffer-server kek init makes one"), "\(said)")
        nothing("serve")

        (status, said) = try Self.run(["kek", "init"] + options, environment: environment)
        #expect(status == 0 && said.contains("made the KEK ring") && said.contains("made the database"), "\(said)")
        (status, said) = try Self.run(["kek", "init"] + options, environment: environment)
        #expect(status != 0 && said.contains("exist already: nothing to make"), "\(said)")
        #expect(try Self.run(["operator", "list"] + options, environment: environment).0 == 0)

        // A ring with no database under it (a misspelt path or schema): refused, nothing made.
        let elsewhere: [String]
        if backend == .sqlite {
            elsewhere = ["--database", issuer.folder + "/databse.sqlite"]
        } else {
            elsewhere = ["--database", try TestPostgres.freshURL()]
        }
        (status, said) = try Self.run(
            ["operator", "list", "--data", data, "--kek-passphrase-file", issuer.folder + "/kek-passphrase"]
                + elsewhere, environment: environment)
        #expect(status != 0 && said.contains("kek init makes"), "\(said)")
        if backend == .sqlite {
            #expect(!FileManager.default.fileExists(atPath: issuer.folder + "/databse.sqlite"))
        } else {
            let schema = TestPostgres.schema(of: elsewhere[1])!
            let tables = try TestPostgres.value(
                elsewhere[1], "SELECT count(*) FROM information_schema.tables WHERE table_schema = '\(schema)'")
            #expect(tables == "0")
        }

        // A database whose KEK ring is gone (on PostgreSQL, init's default
        // put it in the database: its row deleted with psql): init will
        // not make a new KEK for it.
        if backend == .sqlite {
            try FileManager.default.removeItem(atPath: data + "/kek.ckr")
        } else {
            #expect(!FileManager.default.fileExists(atPath: data + "/kek.ckr"))
            _ = try TestPostgres.value(database[1], "DELETE FROM kek_ring RETURNING 1")
        }
        (status, said) = try Self.run(["kek", "init"] + options, environment: environment)
        #expect(status != 0 && said.contains("restore kek.ckr"), "\(said)")
        #expect(!FileManager.default.fileExists(atPath: data + "/kek.ckr"))
    }

    @Test func aKEKKeychainIsMadeOnlyByInit() throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        try FileManager.default.createDirectory(
            atPath: issuer.folder + "/keychain", withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let keychain = issuer.folder + "/keychain/kek.keychain"
        let options = [
            "--data", data, "--kek-keychain", keychain, "--kek-tag", "kek", "--kek-keychain-passphrase-file",
            try ServerProcess.passphraseFile(issuer),
        ]
        var (status, said) = try Self.run(["operator", "list"] + options)
        #expect(status != 0 && said.contains("there is no KEK ring at"), "\(said)")
        #expect(!FileManager.default.fileExists(atPath: keychain))
        (status, said) = try Self.run(["kek", "init"] + options)
        #expect(status == 0 && said.contains("made the KEK ring"), "\(said)")
        #expect(try Self.run(["operator", "list"] + options).0 == 0)
    }
}
#endif
