#if Server
import ArgumentParser
import Coffer
import Foundation

/// PostgreSQL's own tools, for backups: `pg_dump` makes the copy and
/// `pg_restore` reads it. The connection goes in libpq's variables (the
/// password in `PGPASSWORD`, never in argv).
enum PostgresTools {
    /// The key server's tables, which every dump of its schema holds.
    static let serverTables: Set<String> = [
        "audit", "audit_anchors", "dpop_proofs", "key_floors", "keys", "operators", "rate_counts", "server_secrets",
        "store_anchors", "subjects",
    ]

    static func environment(_ url: PostgresURL, password: String?) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["PGHOST"] = url.host
        environment["PGPORT"] = String(url.port)
        environment["PGUSER"] = url.user
        environment["PGDATABASE"] = url.database
        environment["PGSSLMODE"] = url.sslMode.rawValue
        environment["PGSSLROOTCERT"] = url.sslRootCert
        environment["PGPASSWORD"] = password
        return environment
    }

    /// Runs `tool` (found on PATH) to its end: what it wrote, or an error
    /// with the last of what it said.
    static func run(_ tool: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        // What it says goes to a file, so that a full pipe never stalls it.
        let said = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-\(tool)-\(UUID().uuidString)")
        FileManager.default.createFile(atPath: said.path, contents: nil, attributes: [.posixPermissions: 0o600])
        defer { try? FileManager.default.removeItem(at: said) }
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: said)
        do { try process.run() } catch { throw CofferError(.io, "cannot run \(tool): \(error)") }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: (try? Data(contentsOf: said)) ?? Data(), as: UTF8.self)
            throw CofferError(
                .io,
                "\(tool) failed (status \(process.terminationStatus)): \(text.suffix(600))"
                    + (process.terminationStatus == 127 ? " (is PostgreSQL's client installed?)" : ""))
        }
        return data
    }

    /// `pg_dump --format=custom` of the server's schema into `folder/keys.dump` (mode 600).
    static func dump(_ url: PostgresURL, password: String?, to folder: String) throws {
        let path = folder + "/" + BackupFolder.dump
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        else { throw CofferError(.io, "cannot write \(path)") }
        _ = try run(
            "pg_dump", ["--format=custom", "--no-owner", "--schema=\(url.schema ?? "public")", "--file=\(path)"],
            environment: environment(url, password: password))
    }

    /// The tables whose rows a dump holds (`pg_restore --list`).
    static func tables(in dump: String) throws -> Set<String> {
        let list = String(decoding: try run("pg_restore", ["--list", dump]), as: UTF8.self)
        var tables: Set<String> = []
        for line in list.split(separator: "\n") where !line.hasPrefix(";") {
            // "214; 0 16390 TABLE DATA schema table owner"
            let words = line.split(separator: " ")
            guard let at = words.firstIndex(of: "DATA"), at > 0, words[at - 1] == "TABLE", words.count > at + 2
            else { continue }
            tables.insert(String(words[at + 2]))
        }
        return tables
    }

    /// The KEK ring's bytes in a dump's `kek_ring` row (`pg_restore
    /// --data-only`: COPY text, the bytea as `\\x` and hex).
    static func kekRing(_ dump: String) throws -> Data {
        let text = String(
            decoding: try run("pg_restore", ["--data-only", "--table=kek_ring", "--file=-", dump]), as: UTF8.self)
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t")
            guard fields.count == 2, fields[0] == "1", fields[1].hasPrefix("\\\\x") else { continue }
            guard let bytes = Hex.decode(String(fields[1].dropFirst(3))) else { break }
            return Data(bytes)
        }
        throw CofferError(.stateAuthenticationFailed, "the dump holds no KEK ring, and the backup has no kek.ckr")
    }
}

extension DataOptions {
    /// The database's URL when it is PostgreSQL; nil for SQLite.
    func postgresURL(_ settings: ServerSettings) throws -> PostgresURL? {
        let directory = try settings.required(self.directory, "data", flag: "--data")
        let database = settings.value(self.database, "database") ?? directory + "/keys.sqlite"
        guard PostgresURL.names(database) else { return nil }
        return try PostgresURL(database, what: "--database")
    }

    /// The PostgreSQL password from its file, else `PGPASSWORD`.
    func databasePassword(_ settings: ServerSettings) throws -> String? {
        let file = settings.value(databasePasswordFile, "postgres.password.file")
        return PostgresURL.password(
            file: try file.map { Array(try ServerFiles.secretFile($0, what: "the database password file")) })
    }
}
#endif
