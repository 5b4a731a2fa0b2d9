#if Server
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `coffer store` on a real PostgreSQL server (scripts/with-postgres): the
/// password from a file, four processes writing at once, `kill -9` during
/// puts and jobs, and no sealed plaintext in a `pg_dump`. In CI a missing
/// server is a failure; elsewhere these tests are skipped.
@Suite(.serialized) struct StorePostgresCLITests {
    static let environment = ProcessInfo.processInfo.environment

    static var available: Bool {
        let present = environment["COFFER_TEST_POSTGRES_URL"] != nil
        if !present && environment["CI"] == "true" {
            Issue.record("CI runs these tests under scripts/with-postgres; COFFER_TEST_POSTGRES_URL is not set")
        }
        return present
    }

    /// A store in its own PostgreSQL schema, under a KEK file.
    static func setUp(_ name: String, schema: String = StoreCLITests.schema, in folder: TemporaryDirectory? = nil)
        throws -> (TemporaryDirectory, [String])
    {
        let directory = try folder ?? TemporaryDirectory()
        try directory.write("kek", (0..<32).map { UInt8($0 * 11 & 0xff) })
        try directory.write("schema.json", Array(schema.utf8))
        let password = try String(contentsOfFile: environment["COFFER_TEST_POSTGRES_PASSWORD_FILE"]!, encoding: .utf8)
        try directory.write("dbpass", Array(password.utf8))
        let options = [
            "--db", environment["COFFER_TEST_POSTGRES_URL"]! + "?schema=\(name)", "--db-password-file", "dbpass",
            "--kek-file", "kek",
        ]
        StoreCLITests.ok(
            try CLI.coffer(["store", "init", "--schema", "schema.json"] + options, in: directory.url),
            "init on PostgreSQL")
        return (directory, options)
    }

    static func run(_ arguments: [String], _ options: [String], _ directory: TemporaryDirectory, stdin: [UInt8] = [])
        throws -> CLI.Result
    {
        try CLI.coffer(["store"] + arguments + options, stdin: stdin, in: directory.url)
    }

    @Test(.enabled(if: available)) func seedFlowFourWritersAndADump() throws {
        let (directory, options) = try Self.setUp("cli_seed")
        let secrets = (0..<20).map { "pg-sealed-\($0)-\(UUID().uuidString)" }
        let lines = secrets.enumerated().map {
            "{\"to\": \"r\($0.offset % 4)\", \"description\": \"\($0.element)\", \"email\": \"E\($0.offset)@x.org\"}\n"
        }
        StoreCLITests.ok(
            try Self.run(["put", "--table", "presents"], options, directory, stdin: Array(lines.joined().utf8)), "put")
        try directory.write("wanted", Array("e7@X.ORG".utf8))
        let found = try Self.run(["find", "--table", "presents", "--where-file", "email=wanted"], options, directory)
        StoreCLITests.ok(found, "find")
        #expect(found.stdoutText.contains(secrets[7]) && found.stdoutText.split(separator: "\n").count == 1)
        // Four processes writing at once, 40 records each, one per transaction.
        let processes = try (0..<4).map { worker -> Process in
            let batch = (0..<40).map { "{\"to\": \"w\(worker)\", \"description\": \"d\($0)\"}\n" }.joined()
            try directory.write("batch\(worker)", Array(batch.utf8))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.currentDirectoryURL = directory.url
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            process.arguments =
                [
                    "-c",
                    "while IFS= read -r line; do printf '%s' \"$line\" | \"$0\" store put --table presents \"$@\" || exit 1; done < batch\(worker)",
                    CLI.binary.path,
                ] + options
            try process.run()
            return process
        }
        for process in processes {
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        for worker in 0..<4 {
            let rows = try Self.run(["find", "--table", "presents", "--where", "to=w\(worker)"], options, directory)
            #expect(rows.stdoutText.split(separator: "\n").count == 40, "worker \(worker)")
        }
        StoreCLITests.ok(try Self.run(["verify"], options, directory), "verify")
        // pg_dump of the whole database: clear fields there, sealed ones nowhere.
        let bin = Self.environment["COFFER_TEST_POSTGRES_BIN"]!
        let url = URLComponents(string: Self.environment["COFFER_TEST_POSTGRES_URL"]!)!
        let dump = try CLI.run(
            bin + "/pg_dump", ["-h", url.host!, "-p", "\(url.port!)", "-U", url.user!, String(url.path.dropFirst())],
            environment: [
                "PGPASSWORD": String(
                    decoding: try Data(contentsOf: directory.url.appendingPathComponent("dbpass")), as: UTF8.self)
            ])
        #expect(dump.status == 0, "\(dump.stderr)")
        #expect(dump.stdoutText.contains("coffer_meta") && dump.stdoutText.contains("w3"))
        for secret in secrets { #expect(!dump.stdoutText.contains(secret), "pg_dump shows a sealed value") }
        #expect(!dump.stdoutText.lowercased().contains("e7@x.org"))
    }

    /// `kill -9` during puts and during a rotation, 20 rounds each: every
    /// acknowledged record is there, the rotation resumes, every cell opens.
    @Test(.enabled(if: available)) func killNineOnPostgres() throws {
        let (directory, options) = try Self.setUp("cli_kill")
        StoreCLITests.ok(
            try Self.run(
                ["put", "--table", "presents"], options, directory, stdin: Array(StoreJobCLITests.records().utf8)),
            "put")
        var acknowledged: [String] = []
        for round in 0..<20 {
            try directory.write("record", Array("{\"to\": \"k\", \"description\": \"round \(round)\"}".utf8))
            if let output = try StoreJobCLITests.interrupted(
                ["store", "put", "--table", "presents", "record"] + options, in: directory, pause: 500_000),
                output.contains("\"id\"")
            {
                acknowledged.append("round \(round)")
            }
        }
        let present = try Self.run(["find", "--table", "presents", "--where", "to=k"], options, directory).stdoutText
        #expect(acknowledged.allSatisfy { present.contains("\"\($0)\"") }, "acknowledged puts lost")
        var (killed, resumed) = (0, 0)
        for _ in 0..<20 {
            if let output = try StoreJobCLITests.interrupted(
                ["store", "rotate", "--batch", "100"] + options, in: directory, pause: 300_000)
            {
                if output.contains("(resumed)") { resumed += 1 }
            } else {
                killed += 1
            }
        }
        StoreCLITests.ok(try Self.run(["rotate"], options, directory), "rotate to the end")
        StoreCLITests.ok(try Self.run(["verify"], options, directory), "verify after the kills")
        let everything = try Self.run(["find", "--table", "presents", "--where", "to=r3"], options, directory)
        #expect(everything.stdoutText.split(separator: "\n").count == StoreJobCLITests.rows / 10)
        print(
            "store on PostgreSQL kill -9: 20 puts (\(acknowledged.count) acknowledged, all present), 20 rotations (\(killed) killed, \(resumed) resumed)"
        )
        #expect(killed >= 5)
    }

    /// `reindex` and `migrate` on PostgreSQL, each killed at random 20
    /// times and run again: every row stays found and verified; a
    /// migration that ends starts over on a fresh store with the column clear.
    @Test(.enabled(if: available)) func killNineDuringJobsOnPostgres() throws {
        let (directory, options) = try Self.setUp("cli_reindex")
        StoreCLITests.ok(
            try Self.run(
                ["put", "--table", "presents"], options, directory, stdin: Array(StoreJobCLITests.records().utf8)),
            "put")
        var (killed, resumed) = (0, 0)
        for _ in 0..<20 {
            if let output = try StoreJobCLITests.interrupted(
                ["store", "reindex", "--batch", "20"] + options, in: directory, pause: 400_000)
            {
                if output.contains("(resumed)") { resumed += 1 }
            } else {
                killed += 1
            }
        }
        StoreCLITests.ok(try Self.run(["reindex"], options, directory), "reindex to the end")
        StoreCLITests.ok(try Self.run(["verify"], options, directory), "verify after the reindex kills")
        for probe in [0, 17, 49] {
            let found = try Self.run(
                ["find", "--table", "presents", "--where", "email= e\(probe)@X.org"], options, directory)
            #expect(found.stdoutText.split(separator: "\n").count == StoreJobCLITests.rows / 50, "email \(probe)")
        }
        print("store on PostgreSQL reindex kill -9: 20 rounds, \(killed) killed, \(resumed) resumed")
        #expect(killed >= 5)

        let users = """
            {"tables": [{"name": "users", "primaryKey": "id", "fields": [{"name": "id", "type": "integer"},
              {"name": "name", "type": "text"}, {"name": "email", "type": "text"}]}]}
            """
        let people = (0..<StoreJobCLITests.rows).map { "{\"name\": \"n\", \"email\": \"Person\($0 % 50)@Mail.org\"}\n" }
            .joined()
        var generation = 0
        func fresh() throws -> [String] {
            generation += 1
            let (_, options) = try Self.setUp("cli_migrate_\(generation)", schema: users, in: directory)
            StoreCLITests.ok(
                try Self.run(["put", "--table", "users"], options, directory, stdin: Array(people.utf8)), "put users")
            return options
        }
        func check(_ options: [String], _ moment: String) throws {
            StoreCLITests.ok(try Self.run(["verify"], options, directory), "verify \(moment)")
            for probe in [0, 17, 49] {
                let found = try Self.run(
                    ["find", "--table", "users", "--where", "email=Person\(probe)@Mail.org"], options, directory)
                #expect(
                    found.stdoutText.split(separator: "\n").count == StoreJobCLITests.rows / 50,
                    "\(moment): email \(probe)")
            }
        }
        var current = try fresh()
        var (finished, migrateKilled) = (0, 0)
        for round in 0..<20 {
            let output = try StoreJobCLITests.interrupted(
                [
                    "store", "migrate", "--table", "users", "--field", "email", "--bind", "name", "--index",
                    "email_exact,6,lowercase", "--batch", "20",
                ] + current,
                in: directory, pause: 400_000)
            if round % 5 == 4 || output != nil { try check(current, "migrate round \(round)") }
            if output != nil {
                finished += 1
                current = try fresh()
            } else {
                migrateKilled += 1
            }
        }
        print("store on PostgreSQL migrate kill -9: 20 rounds, \(migrateKilled) killed, \(finished) finished")
        #expect(migrateKilled >= 5)
    }

    /// A plain PostgreSQL table (made with psql, a varchar column among
    /// them) adopted as it is, its email column sealed in place with an
    /// index: found exactly, verified, and absent from a pg_dump.
    @Test(.enabled(if: available)) func adoptAPlainTableAndSealAColumn() throws {
        let directory = try TemporaryDirectory()
        let bin = Self.environment["COFFER_TEST_POSTGRES_BIN"]!
        let url = URLComponents(string: Self.environment["COFFER_TEST_POSTGRES_URL"]!)!
        let password = try String(
            contentsOfFile: Self.environment["COFFER_TEST_POSTGRES_PASSWORD_FILE"]!, encoding: .utf8)
        let made = try Self.psql(
            "CREATE SCHEMA adopted; CREATE TABLE adopted.users (id bigint PRIMARY KEY, name text, email varchar(100)); INSERT INTO adopted.users SELECT n, 'n', 'Person' || (n % 50) || '@Mail.org' FROM generate_series(1, 300) n"
        )
        #expect(made.status == 0, "\(made.stderr)")
        try directory.write("kek", (0..<32).map { UInt8($0 * 3 & 0xff) })
        try directory.write("dbpass", Array(password.utf8))
        try directory.write(
            "users.json",
            Array(
                """
                {"tables": [{"name": "users", "primaryKey": "id", "fields": [{"name": "id", "type": "integer"},
                  {"name": "name", "type": "text"}, {"name": "email", "type": "text"}]}]}
                """.utf8))
        let options = [
            "--db", Self.environment["COFFER_TEST_POSTGRES_URL"]! + "?schema=adopted", "--db-password-file", "dbpass",
            "--kek-file", "kek",
        ]
        StoreCLITests.ok(
            try CLI.coffer(["store", "init", "--adopt", "--schema", "users.json"] + options, in: directory.url), "adopt"
        )
        StoreCLITests.ok(
            try Self.run(
                [
                    "migrate", "--table", "users", "--field", "email", "--bind", "name", "--index",
                    "email_exact,7,lowercase",
                ],
                options, directory), "migrate")
        let found = try Self.run(["find", "--table", "users", "--where", "email=person7@mail.org"], options, directory)
        #expect(found.stdoutText.split(separator: "\n").count == 6, "\(found.stdoutText)")
        StoreCLITests.ok(try Self.run(["verify"], options, directory), "verify")
        let dump = try CLI.run(
            bin + "/pg_dump",
            ["-h", url.host!, "-p", "\(url.port!)", "-U", url.user!, "-n", "adopted", String(url.path.dropFirst())],
            environment: ["PGPASSWORD": password])
        #expect(dump.status == 0 && dump.stdoutText.contains("coffer_meta"), "\(dump.stderr)")
        #expect(!dump.stdoutText.contains("@Mail.org"), "pg_dump shows a clear email after the migration")
        // A table that is not as the schema says is refused, naming what differs.
        let wrong = try CLI.coffer(
            ["store", "init", "--adopt", "--schema", "users.json"]
                + [
                    "--db", Self.environment["COFFER_TEST_POSTGRES_URL"]! + "?schema=nothing", "--db-password-file",
                    "dbpass", "--kek-file", "kek",
                ],
            in: directory.url)
        #expect(wrong.status != 0 && wrong.stderr.contains("no table users"), "\(wrong.stderr)")
        #expect(
            try Self.psql("CREATE SCHEMA misfit; CREATE TABLE misfit.other (id text PRIMARY KEY, n text)").status == 0)
        let misfit = [
            "--db", Self.environment["COFFER_TEST_POSTGRES_URL"]! + "?schema=misfit", "--db-password-file", "dbpass",
            "--kek-file", "kek",
        ]
        for (schema, complaint) in [
            (
                #"{"tables": [{"name": "other", "primaryKey": "id", "fields": [{"name": "id", "type": "text"}, {"name": "n", "type": "integer"}]}]}"#,
                "does not hold integer"
            ),
            (
                #"{"tables": [{"name": "other", "primaryKey": "n", "fields": [{"name": "id", "type": "text"}, {"name": "n", "type": "text"}]}]}"#,
                "primary key"
            ),
        ] {
            try directory.write("other.json", Array(schema.utf8))
            let refused = try CLI.coffer(
                ["store", "init", "--adopt", "--schema", "other.json"] + misfit, in: directory.url)
            #expect(refused.status != 0 && refused.stderr.contains(complaint), "\(refused.stderr)")
        }
    }
}
#endif
