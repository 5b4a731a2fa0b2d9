#if Server
import Coffer
import Foundation
import Testing

/// `coffer-server backup` and `backup verify` (issue 59, part 5): the
/// database and the KEK ring copied together and checked by opening them;
/// a copy changed with ordinary tools, a wrong root, a folder already used
/// are each refused with their exit status.
@Suite struct BackupTests {
    static func server(_ arguments: [String], _ environment: [String: String]) throws -> (Int32, String) {
        try RestoreDrillTests.server(arguments, environment)
    }

    /// Flips one byte in the middle of `path` with Python, as anyone could.
    static func flip(_ path: String) throws {
        let script =
            "import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 1; open(p, 'wb').write(b)"
        let run = try Spawned.run("/usr/bin/env", ["python3", "-c", script, path])
        guard run.status == 0 else { throw CofferError(.io, "flip failed") }
    }

    @Test(arguments: Backend.allCases) func aBackupIsVerifiedAndAChangedOneIsRefused(_ backend: Backend)
        async throws
    {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let (options, environment) = try backend.serverOptions()
        let kek = ["--data", data, "--kek-passphrase-file", try ServerProcess.passphraseFile(issuer)] + options
        // A kek.ckr on both (PostgreSQL's default is the database's ring: below).
        #expect(try Self.server(["kek", "init", "--ring-in-file"] + kek, environment).0 == 0)
        let keys = try await RestoreDrillTests.keys(issuer, data, options, environment)
        #expect(keys.values.allSatisfy { !$0.hasPrefix("status") }, "\(keys)")

        let backup = issuer.folder + "/backup"
        var run = try Self.server(["backup", "--to", backup] + kek, environment)
        #expect(run.0 == 0 && run.1.contains("verified: the KEK ring opens"), "\(run.1)")
        let copy = backup + "/" + (backend == .sqlite ? "keys.sqlite" : "keys.dump")
        if backend == .sqlite { #expect(run.1.contains("opens with 3 stored keys"), "\(run.1)") }
        for name in ["kek.ckr", "backup.json", backend == .sqlite ? "keys.sqlite" : "keys.dump"] {
            let mode = try FileManager.default.attributesOfItem(atPath: backup + "/" + name)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(name) is \(String(mode ?? 0, radix: 8))")
        }
        run = try Self.server(["backup", "verify", backup] + kek, environment)
        #expect(run.0 == 0 && run.1.hasPrefix("verified"), "\(run.1)")

        // A folder already used; a wrong root; a copy changed with Python.
        run = try Self.server(["backup", "--to", backup] + kek, environment)
        #expect(run.0 == 64 && run.1.contains("is not empty"), "\(run.0) \(run.1)")
        let wrong = issuer.folder + "/wrong"
        FileManager.default.createFile(
            atPath: wrong, contents: Data("another passphrase\n".utf8), attributes: [.posixPermissions: 0o600])
        run = try Self.server(["backup", "verify", backup, "--data", data, "--kek-passphrase-file", wrong], [:])
        #expect(run.0 == 77 && run.1.contains("the backup's KEK ring"), "\(run.0) \(run.1)")
        let pristine = try Data(contentsOf: URL(fileURLWithPath: copy))
        try Self.flip(copy)
        run = try Self.server(["backup", "verify", backup] + kek, environment)
        #expect(run.0 == 65 && run.1.contains("was changed after the backup was made"), "\(run.0) \(run.1)")
        try pristine.write(to: URL(fileURLWithPath: copy))

        // backup.json edited with Python: a member it never writes, a file
        // outside the backup's names, a digest that is not one.
        let manifest = backup + "/backup.json"
        let original = try Data(contentsOf: URL(fileURLWithPath: manifest))
        for edit in [
            "m['extra'] = 1", "m['files']['../keys.sqlite'] = m['files'].popitem()[1]",
            "m['files']['kek.ckr'] = 'x' * 64", "m['ring'] = 'elsewhere'",
        ] {
            let script =
                "import json, sys; p = sys.argv[1]; m = json.load(open(p)); \(edit); json.dump(m, open(p, 'w'))"
            #expect(try Spawned.run("/usr/bin/env", ["python3", "-c", script, manifest]).status == 0)
            run = try Self.server(["backup", "verify", backup] + kek, environment)
            #expect(run.0 == 65 && run.1.contains("is not a backup manifest this version reads"), "\(edit): \(run.1)")
            try original.write(to: URL(fileURLWithPath: manifest))
        }
        try FileManager.default.removeItem(atPath: backup + "/kek.ckr")
        run = try Self.server(["backup", "verify", backup] + kek, environment)
        #expect(run.0 == 65 && run.1.contains("lost kek.ckr"), "\(run.0) \(run.1)")
    }

    /// The ring kept in the database travels inside the copy: from the
    /// SQLite file's row, or from the dump's (read with pg_restore).
    @Test(arguments: Backend.allCases) func aRingInTheDatabaseIsVerifiedFromTheCopy(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let (options, environment) = try backend.serverOptions()
        let kek = ["--data", data, "--kek-passphrase-file", try ServerProcess.passphraseFile(issuer)] + options
        var run = try Self.server(
            ["kek", "init"] + (backend == .sqlite ? ["--ring-in-database"] : []) + kek, environment)
        #expect(run.0 == 0, "\(run.1)")
        let backup = issuer.folder + "/backup"
        run = try Self.server(["backup", "--to", backup] + kek, environment)
        #expect(run.0 == 0 && run.1.contains("verified: the KEK ring opens (1 KEK key, 0 disabled)"), "\(run.1)")
        #expect(!FileManager.default.fileExists(atPath: backup + "/kek.ckr"))
        let wrong = issuer.folder + "/wrong"
        FileManager.default.createFile(
            atPath: wrong, contents: Data("another passphrase\n".utf8), attributes: [.posixPermissions: 0o600])
        run = try Self.server(["backup", "verify", backup, "--data", data, "--kek-passphrase-file", wrong], [:])
        #expect(run.0 == 77, "\(run.0) \(run.1)")
    }
}
#endif
