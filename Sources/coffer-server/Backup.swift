#if Server
import ArgumentParser
import Coffer
import CofferKeyServerCore
import Crypto
import Foundation

/// `coffer-server backup --to DIR` and `backup verify DIR`: the database
/// and the KEK ring together, each copy checked by opening it
/// (docs/key-server-operating.md, "Backups").
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copies the database and the KEK ring into a new folder, and checks the copy by opening it.",
        subcommands: [Make.self, Verify.self], defaultSubcommand: Make.self)

    struct Make: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "make",
            abstract:
                "Copies the database (SQLite's online backup, or pg_dump) and the KEK ring into DIR, then verifies DIR."
        )
        @OptionGroup var data: DataOptions
        @Option(help: ArgumentHelp("A new folder (made mode 700) for the copy.", valueName: "DIR"))
        var to: String

        func run() async throws {
            let settings = try await data.settings()
            let folder = try BackupFolder.create(to)
            let postgres = try data.postgresURL(settings)
            let (ring, primary) = try await data.withRing(settings) { store, place in
                // The database first, then the ring: a ring as new as the
                // rows or newer holds every KEK key they name.
                if let postgres {
                    try PostgresTools.dump(postgres, password: try data.databasePassword(settings), to: folder)
                } else {
                    try await store.backupSQLite(to: folder + "/" + BackupFolder.sqlite)
                }
                let primary = String(format: "%08x", store.kekPrimaryID)
                guard case .file(let file) = place else { return ("database", primary) }
                try BackupFolder.copy(file.path, to: folder + "/kek.ckr")
                return ("file", primary)
            }
            try BackupFolder.writeManifest(folder, database: postgres == nil ? "sqlite" : "postgresql", ring: ring)
            let report = try await BackupCheck(folder: folder, secret: try data.kekRingFile(settings).secret).run()
            print("backed up to \(folder) (KEK primary \(primary)); \(report)")
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Checks a backup: every file as it was made, the KEK ring opens under the root, the database copy opens (SQLite: its keys' KEK keys in the ring, the audit chain intact; PostgreSQL: pg_restore reads the dump)."
        )
        @OptionGroup var data: DataOptions
        @Argument(help: ArgumentHelp("The backup's folder.", valueName: "DIR"))
        var folder: String

        func run() async throws {
            let settings = try await data.settings()
            print(try await BackupCheck(folder: folder, secret: try data.kekRingFile(settings).secret).run())
        }
    }
}

/// A backup's folder: its files and the manifest of their digests.
enum BackupFolder {
    static let sqlite = "keys.sqlite"
    static let dump = "keys.dump"
    static let manifest = "backup.json"

    /// Makes `path` (mode 700), refusing one that exists and is not empty.
    static func create(_ path: String) throws -> String {
        var folder = path
        while folder.count > 1 && folder.hasSuffix("/") { folder.removeLast() }
        if let contents = try? FileManager.default.contentsOfDirectory(atPath: folder), !contents.isEmpty {
            throw ValidationError("--to \(folder) is not empty: a backup goes into a new folder")
        }
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return folder
    }

    static func copy(_ source: String, to destination: String) throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
        guard
            FileManager.default.createFile(
                atPath: destination, contents: bytes, attributes: [.posixPermissions: 0o600])
        else { throw CofferError(.io, "cannot write \(destination)") }
    }

    static func digest(_ path: String) throws -> String {
        Hex.encode(SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// `backup.json`: what the folder holds and each file's SHA-256.
    static func writeManifest(_ folder: String, database: String, ring: String) throws {
        let names = [database == "sqlite" ? sqlite : dump] + (ring == "file" ? ["kek.ckr"] : [])
        var files: [String: String] = [:]
        for name in names { files[name] = try digest(folder + "/" + name) }
        let document: [String: Any] = [
            "format": 1, "made": ISO8601DateFormatter().string(from: Date()), "version": CofferVersion.string,
            "database": database, "ring": ring, "files": files,
        ]
        let bytes = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
        guard
            FileManager.default.createFile(
                atPath: folder + "/" + manifest, contents: bytes, attributes: [.posixPermissions: 0o600])
        else { throw CofferError(.io, "cannot write \(folder)/\(manifest)") }
    }
}
#endif
