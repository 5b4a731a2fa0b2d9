#if Server
import Coffer
import Foundation
import Testing

/// The fleet case (issue 57, part 4): processes with state folders of
/// their own, on one store, anchored at one coffer-server. The whole
/// database is put back as it was (the SQLite file copied back; on
/// PostgreSQL pg_dump and pg_restore), and every process refuses it — a
/// fresh one whose state folder never saw the store included — while
/// without the server such a fresh process could not tell.
@Suite(.serialized) struct StoreAnchorFleetTests {
    /// `coffer store` with the store's options, as process `folder` (its state folder).
    static func store(
        _ arguments: [String], _ options: [String], folder: String, record: String? = nil
    ) throws -> (Int32, String, String) {
        var arguments = arguments
        if let record {
            let file = (folder as NSString).deletingLastPathComponent + "/record-\(UUID().uuidString).json"
            try Data(record.utf8).write(to: URL(fileURLWithPath: file))
            arguments.append(file)
        }
        return try ServerKeyCLITests.run(["store"] + arguments + options, environment: ["COFFER_STATE_DIR": folder])
    }

    static let schema = """
        {"tables": [{"name": "notes", "primaryKey": "id",
          "fields": [{"name": "id", "type": "integer"}, {"name": "body", "type": "text", "sealed": true}]}]}
        """

    /// A server, an operator of scope stores:anchor, three state folders.
    static func fleet() throws -> (Issuer, ServerProcess, [String], [String]) {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        try ServerProcess(issuer: issuer, data: data).stop()
        let tokenFile = issuer.folder + "/anchor-token"
        try ServerKeyCLITests.secretFile(
            tokenFile,
            ServerProcess.addOperator(issuer: issuer, data: data, name: "fleet", extra: ["--scope", "stores:anchor"]))
        let server = try ServerProcess(issuer: issuer, data: data)
        let folders = try ["a", "b", "c"].map { name in
            let folder = issuer.folder + "/state-" + name
            try FileManager.default.createDirectory(
                atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            return folder
        }
        guard
            FileManager.default.createFile(
                atPath: issuer.folder + "/kek", contents: Data((0..<32).map { UInt8($0 * 5 & 0xff) }),
                attributes: [.posixPermissions: 0o600])
        else { throw CofferError(.io, "cannot write the KEK file") }
        try Data(schema.utf8).write(to: URL(fileURLWithPath: issuer.folder + "/schema.json"))
        return (issuer, server, folders, ["--anchor-server", server.url, "--anchor-token-file", tokenFile])
    }

    static func refused(
        _ result: (Int32, String, String), _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(result.0 == 3, "\(what): \(result.0) \(result.2)", sourceLocation: sourceLocation)
        #expect(
            result.2.contains("older than the state anchored at http://127.0.0.1"), "\(what): \(result.2)",
            sourceLocation: sourceLocation)
    }

    /// The fleet's steps once the store exists (`options` name it and its KEK):
    /// writes from two processes, a backup by `save`, more writes, `restore`.
    static func rollBack(
        _ options: [String], anchor: [String], folders: [String], save: () throws -> Void, restore: () throws -> Void
    ) throws {
        let (a, b, c) = (folders[0], folders[1], folders[2])
        for (folder, text) in [(a, "from a"), (b, "from b")] {
            let put = try store(
                ["put", "--table", "notes"], options + anchor, folder: folder, record: #"{"body": "\#(text)"}"#)
            #expect(put.0 == 0, "put: \(put.2)")
        }
        try save()
        let later = try store(["put", "--table", "notes"], options + anchor, folder: a, record: #"{"body": "later"}"#)
        #expect(later.0 == 0, "put: \(later.2)")
        try restore()
        let get = ["get", "--table", "notes", "--id", "1"]
        // The process that wrote last is stopped by its own state folder already.
        let last = try store(get, options + anchor, folder: a)
        #expect(last.0 == 3 && last.2.contains("older than the state anchored"), "\(last)")
        refused(try store(get, options + anchor, folder: b), "another process of the fleet")
        refused(try store(get, options + anchor, folder: c), "a fresh process that never saw the store")
        let status = try store(["anchor", "status"], options + anchor, folder: c)
        #expect(status.0 == 3 && status.1.contains("NEWER than the database"), "\(status)")
        // Without the server, the fresh process has nothing to compare with.
        #expect(try store(get, options, folder: issuer(c) + "/state-d").0 == 0)
        // Accepted on purpose, it is the anchored state everywhere.
        let accept = try store(["accept-rollback"], options + anchor, folder: a)
        #expect(accept.0 == 0, "accept-rollback: \(accept.2)")
        for folder in [a, b, c] {
            let after = try store(get, options + anchor, folder: folder)
            #expect(after.0 == 0, "after accept-rollback: \(after.2)")
        }
    }

    static func issuer(_ folder: String) -> String { (folder as NSString).deletingLastPathComponent }

    @Test func aCopiedBackSQLiteFileIsRefusedByTheWholeFleet() throws {
        let (issuer, server, folders, anchor) = try Self.fleet()
        defer { server.stop() }
        let database = issuer.folder + "/notes.sqlite"
        let options = ["--db", database, "--kek-file", issuer.folder + "/kek"]
        let made = try Self.store(
            ["init", "--schema", issuer.folder + "/schema.json"], options + anchor, folder: folders[0])
        #expect(made.0 == 0, "init: \(made.2)")
        let files = ["", "-wal", "-shm"]
        try Self.rollBack(
            options, anchor: anchor, folders: folders,
            save: {
                for suffix in files where FileManager.default.fileExists(atPath: database + suffix) {
                    try FileManager.default.copyItem(atPath: database + suffix, toPath: database + suffix + ".bak")
                }
            },
            restore: {
                for suffix in files {
                    try? FileManager.default.removeItem(atPath: database + suffix)
                    if FileManager.default.fileExists(atPath: database + suffix + ".bak") {
                        try FileManager.default.moveItem(atPath: database + suffix + ".bak", toPath: database + suffix)
                    }
                }
            })
    }

    @Test func aPgRestoreIsRefusedByTheWholeFleet() throws {
        let (issuer, server, folders, anchor) = try Self.fleet()
        defer { server.stop() }
        let (url, password) = try TestPostgres.server()
        let schema = "fleet_" + String(UUID().uuidString.prefix(8)).lowercased()
        let passwordFile = issuer.folder + "/dbpass"
        try ServerKeyCLITests.secretFile(passwordFile, password)
        let options = [
            "--db", url + "?schema=" + schema, "--db-password-file", passwordFile, "--kek-file", issuer.folder + "/kek",
        ]
        let made = try Self.store(
            ["init", "--schema", issuer.folder + "/schema.json"], options + anchor, folder: folders[0])
        #expect(made.0 == 0, "init: \(made.2)")
        let dump = issuer.folder + "/fleet.dump"
        try Self.rollBack(
            options, anchor: anchor, folders: folders,
            save: { try TestPostgres.tool("pg_dump", url, ["-n", schema, "-Fc", "-f", dump]) },
            restore: {
                _ = try TestPostgres.value(url, "DROP SCHEMA \(schema) CASCADE")
                try TestPostgres.tool("pg_restore", url, ["-d", String(URL(string: url)!.path.dropFirst()), dump])
            })
    }
}
#endif
