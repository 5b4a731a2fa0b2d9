#if Server
import Coffer
import Foundation
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// The key server's SQLite files are its user's alone (security review 3,
/// G14 "File modes"): the database is created 0600 wherever `--database`
/// puts it, SQLite gives its WAL and shared-memory files that mode, and a
/// database or WAL that someone opened to others is refused.
@Suite struct DatabaseFileModeTests {
    /// A folder open to everyone (0755), so that only the files' own modes
    /// keep others out.
    static func openFolder() throws -> String {
        let folder = NSTemporaryDirectory() + "coffer-modes-\(UUID().uuidString)"
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return folder
    }

    /// FOLDER/passphrase, the KEK passphrase `operatorAdd` gives, with `mode`.
    static func writePassphrase(in folder: String, mode: Int) throws {
        guard
            FileManager.default.createFile(
                atPath: folder + "/passphrase", contents: Data("a KEK passphrase\n".utf8),
                attributes: [.posixPermissions: mode])
        else { throw CofferError(.io, "cannot write \(folder)/passphrase") }
    }

    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }

    /// `coffer-server operator add` (which opens the database, creating it
    /// if need be) under umask 022, the umask of most users: SQLite alone
    /// would create the file 0644.
    static func operatorAdd(folder: String, database: String) throws -> Spawned {
        try initialize(folder: folder, database: database)
        return try Spawned.run(
            "/bin/sh",
            [
                "-c", #"umask 022; exec "$0" "$@""#, ServerProcess.binary.path, "operator", "add", "--data",
                folder + "/data", "--database", database, "--kek-passphrase-file", folder + "/passphrase", "--name",
                "ops-\(UUID().uuidString.prefix(8))",
            ], errors: .capture)
    }

    /// `kek init` under the same umask, as an operator makes a new server.
    static func initialize(folder: String, database: String) throws {
        _ = try Spawned.run(
            "/bin/sh",
            [
                "-c", #"umask 022; exec "$0" "$@""#, ServerProcess.binary.path, "kek", "init", "--data",
                folder + "/data", "--database", database, "--kek-passphrase-file", folder + "/passphrase",
            ], output: .discard, errors: .discard)
    }

    @Test func aDatabaseOutsideTheDataFolderIsCreated0600AndRefusedOnceOpenedToOthers() throws {
        let folder = try Self.openFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Self.writePassphrase(in: folder, mode: 0o600)
        let database = folder + "/elsewhere.sqlite"
        var run = try Self.operatorAdd(folder: folder, database: database)
        #expect(run.status == 0, "\(run.errorText)")
        #expect(try Self.mode(database) == 0o600)

        // Opened to others with chmod, as an administrator might by mistake.
        #expect(try Spawned.run("/bin/chmod", ["644", database]).status == 0)
        run = try Self.operatorAdd(folder: folder, database: database)
        #expect(run.status != 0)
        #expect(run.errorText.contains("the key database \(database) is open to other users (mode 644); chmod 600 it"))
        #expect(try Spawned.run("/bin/chmod", ["600", database]).status == 0)
        run = try Self.operatorAdd(folder: folder, database: database)
        #expect(run.status == 0, "\(run.errorText)")
    }

    @Test func theWALAndSharedMemoryFilesTakeTheDatabasesModeAndAnOpenWALIsRefused() async throws {
        let folder = try Self.openFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/keys.sqlite"
        let store = try ServerKeyStore(path: path, kek: KeyRing())
        _ = try await store.current(try KeyName(realm: "default", subject: "ana", purpose: "notes"))
        for file in [path, path + "-wal", path + "-shm"] {
            #expect(try Self.mode(file) == 0o600, "\(file)")
        }
        // A WAL left open to others (by a chmod, or by a server of an
        // older version killed while it ran) is refused by the next opener.
        #expect(try Spawned.run("/bin/chmod", ["640", path + "-wal"]).status == 0)
        #expect {
            _ = try ServerKeyStore(path: path, kek: KeyRing())
        } throws: { error in
            (error as? CofferError)?.code == .insecurePermissions
                && "\(error)".contains("\(path)-wal is open to other users (mode 640)")
        }
        withExtendedLifetime(store) {}
    }

    /// The check examines the files without opening them: a descriptor
    /// closed in this process would drop the POSIX locks the first store's
    /// SQLite holds on them, and the next connection of another process to
    /// close would then take the database and remove its WAL from under it.
    @Test func aSecondStoreOnTheFileLeavesTheFirstStoresLocksInPlace() async throws {
        let folder = try Self.openFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/keys.sqlite"
        let first = try ServerKeyStore(path: path, kek: KeyRing())
        _ = try await first.current(try KeyName(realm: "default", subject: "ana", purpose: "notes"))
        let second = try ServerKeyStore(path: path, kek: KeyRing())
        let count = { try Spawned.run("/usr/bin/sqlite3", [path, "SELECT count(*) FROM keys"]).text }
        #expect(try count() == "1\n")
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        _ = try await first.current(try KeyName(realm: "default", subject: "bob", purpose: "notes"))
        #expect(try count() == "2\n")
        withExtendedLifetime(second) {}
    }

    /// The KEK's passphrase file is checked as every secret file the server
    /// reads (security review 3, G11): closed to others, or refused before
    /// it is read.
    @Test func aKEKPassphraseFileOpenToOthersIsRefused() throws {
        let folder = try Self.openFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Self.writePassphrase(in: folder, mode: 0o644)
        var run = try Self.operatorAdd(folder: folder, database: folder + "/keys.sqlite")
        // EX_NOPERM, and no usage text after it: the command line was right.
        #expect(run.status == 77 && !run.errorText.contains("Usage:"), "\(run.status) \(run.errorText)")
        #expect(run.errorText.contains("the passphrase file \(folder)/passphrase is open to other users; chmod 600 it"))
        run = try Self.operatorAdd(folder: folder + "/missing", database: folder + "/keys.sqlite")
        #expect(run.status == 66 && run.errorText.contains("cannot open the passphrase file"), "\(run.errorText)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/data/kek.ckr"))
        #expect(try Spawned.run("/bin/chmod", ["600", folder + "/passphrase"]).status == 0)
        run = try Self.operatorAdd(folder: folder, database: folder + "/keys.sqlite")
        #expect(run.status == 0, "\(run.errorText)")
    }
}
#endif
