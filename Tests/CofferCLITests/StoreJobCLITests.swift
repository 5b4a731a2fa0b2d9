import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `coffer store rotate`, `reindex` and `migrate` killed with SIGKILL at
/// random moments, 100 times each: the next run resumes, no row is lost or
/// doubled, every cell opens, every index entry matches, and finds keep
/// returning exactly the rows a scan of the plaintext would.
@Suite(.serialized) struct StoreJobCLITests {
    static let rows = 1500

    static func records() -> String {
        (0..<rows).map {
            "{\"to\": \"r\($0 % 10)\", \"description\": \"gift \($0)\", \"email\": \"E\($0 % 50)@x.org\"}\n"
        }
        .joined()
    }

    /// Starts `arguments`, kills it after a random pause up to `pause`
    /// microseconds; its standard output when it finished first, else nil.
    static func interrupted(_ arguments: [String], in directory: TemporaryDirectory, pause: useconds_t) throws
        -> String?
    {
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = arguments
        process.currentDirectoryURL = directory.url
        let output = directory.url.appendingPathComponent("job.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = FileHandle.nullDevice
        try process.run()
        usleep(useconds_t.random(in: 0...pause))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        guard process.terminationReason == .exit else { return nil }
        #expect(process.terminationStatus == 0, "\(arguments) failed")
        return String(decoding: try Data(contentsOf: output), as: UTF8.self)
    }

    /// What the kill -9 rounds of a job did, and whether to go on: 100
    /// rounds, and more (up to 300) until `wanted` runs were killed and
    /// resumed a killed one, since how many kills land inside a batch
    /// depends on the machine's load, not only on the pause.
    struct Rounds {
        let wanted: (killed: Int, resumed: Int)
        var round = 0
        var killed = 0
        var resumed = 0

        var finished: Int { round - killed }
        var enough: Bool { killed >= wanted.killed && resumed >= wanted.resumed }
        var goOn: Bool { round < 100 || (round < 300 && !enough) }

        /// One round: the run's standard output when it finished, nil when killed.
        mutating func count(_ output: String?) {
            round += 1
            guard let output else {
                killed += 1
                return
            }
            if output.contains("(resumed)") { resumed += 1 }
        }

        func summary(pause: useconds_t) -> String {
            "\(round) rounds, kills up to \(pause / 1000) ms in, \(killed) killed, \(finished) finished (\(resumed) of them resumed)"
        }
    }

    /// Every record, by `find` on a clear field, checked against what was put.
    static func check(_ directory: TemporaryDirectory, _ moment: String) throws {
        StoreCLITests.ok(try StoreCLITests.store(["verify"], directory), "verify \(moment)")
        for group in [3, 7] {
            let found = try StoreCLITests.descriptions(directory, to: "r\(group)")
            let expected = Set(stride(from: group, to: rows, by: 10).map { "gift \($0)" })
            let seen = found.compactMap { line in expected.first { line.contains("\"\($0)\"") } }
            #expect(found.count == rows / 10 && Set(seen) == expected, "\(moment): r\(group)")
        }
        let byEmail = try StoreCLITests.store(["find", "--table", "presents", "--where", "email=e17@X.org"], directory)
        #expect(byEmail.stdoutText.split(separator: "\n").count == rows / 50, "\(moment): find by email")
    }

    @Test(arguments: ["rotate", "reindex"]) func killNineDuringJob(_ job: String) throws {
        let directory = try StoreCLITests.setUp()
        StoreCLITests.ok(
            try StoreCLITests.store(["put", "--table", "presents"], directory, stdin: Array(Self.records().utf8)), "put"
        )
        // One whole run, timed, sets how long to wait before a kill: up to
        // one and a half runs, so that about a third finish (most of them
        // resuming a killed one) however loaded the machine is.
        let started = Date()
        StoreCLITests.ok(
            try StoreCLITests.store([job, "--batch", "100"], directory), "\(job) once, to time it")
        let pause = useconds_t(max(250_000, Date().timeIntervalSince(started) * 1_500_000))
        var rounds = Rounds(wanted: (killed: 20, resumed: 5))
        while rounds.goOn {
            let round = rounds.round
            rounds.count(
                try Self.interrupted(
                    ["store", job, "--db", "s.sqlite", "--kek-file", "kek", "--batch", "100"], in: directory,
                    pause: pause))
            if round % 20 == 19 { try Self.check(directory, "\(job) round \(round)") }
        }
        let last = try StoreCLITests.store([job], directory)
        StoreCLITests.ok(last, "\(job) to the end")
        try Self.check(directory, "after \(job)")
        print("store \(job) kill -9: \(rounds.summary(pause: pause))")
        #expect(rounds.enough)
    }

    /// A plain database adopted, then its email column sealed by
    /// `migrate`, killed again and again; when a migration ends, a fresh
    /// copy of the plain database starts the next.
    @Test func killNineDuringMigrate() throws {
        let directory = try TemporaryDirectory()
        try directory.write("kek", (0..<32).map { UInt8($0 * 5 & 0xff) })
        let make = """
            import sqlite3
            db = sqlite3.connect("plain.sqlite")
            db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, email TEXT)")
            db.executemany("INSERT INTO users (name, email) VALUES (?, ?)",
                           [("n", "Person%d@Mail.org" % (i % 50)) for i in range(\(Self.rows))])
            db.commit()
            """
        try directory.write("make.py", Array(make.utf8))
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "make.py"]
        python.currentDirectoryURL = directory.url
        try python.run()
        python.waitUntilExit()
        #expect(python.terminationStatus == 0)
        let schema = """
            {"tables": [{"name": "users", "primaryKey": "id", "fields": [{"name": "id", "type": "integer"},
              {"name": "name", "type": "text"}, {"name": "email", "type": "text"}]}]}
            """
        try directory.write("users.json", Array(schema.utf8))
        StoreCLITests.ok(
            try CLI.coffer(
                ["store", "init", "--adopt", "--db", "plain.sqlite", "--schema", "users.json", "--kek-file", "kek"],
                in: directory.url), "adopt")
        let files = FileManager.default
        func fresh() throws {
            for suffix in ["", "-wal", "-shm"] {
                try? files.removeItem(at: directory.url.appendingPathComponent("s.sqlite" + suffix))
            }
            try files.copyItem(
                at: directory.url.appendingPathComponent("plain.sqlite"),
                to: directory.url.appendingPathComponent("s.sqlite"))
            // The copy is an older state of the store adopted once: put
            // back on purpose, so it is accepted as a user would.
            StoreCLITests.ok(try StoreCLITests.store(["accept-rollback"], directory), "accept-rollback")
        }
        // A clear field is found by its exact value, a sealed one by its
        // lowercase: the probes are the values as stored, found either way.
        func check(_ moment: String) throws {
            StoreCLITests.ok(try StoreCLITests.store(["verify"], directory), "verify \(moment)")
            let all = try StoreCLITests.store(["find", "--table", "users", "--where", "name=n"], directory)
            let lines = all.stdoutText.split(separator: "\n")
            #expect(lines.count == Self.rows, "\(moment): rows")
            for probe in [0, 17, 49] {
                let found = try StoreCLITests.store(
                    ["find", "--table", "users", "--where", "email=Person\(probe)@Mail.org"], directory)
                #expect(found.stdoutText.split(separator: "\n").count == Self.rows / 50, "\(moment): email \(probe)")
                #expect(lines.filter { $0.contains("\"Person\(probe)@Mail.org\"") }.count == Self.rows / 50)
            }
        }
        let migrate = [
            "store", "migrate", "--db", "s.sqlite", "--kek-file", "kek", "--table", "users", "--field", "email",
            "--bind", "name", "--index", "email_exact,6,lowercase", "--batch", "100",
        ]
        // One whole migration, timed, sets how long to wait before a kill
        // (as for the other jobs): however loaded the machine, some finish.
        try fresh()
        let started = Date()
        StoreCLITests.ok(try CLI.coffer(migrate, in: directory.url), "migrate once, to time it")
        let pause = useconds_t(max(200_000, Date().timeIntervalSince(started) * 1_500_000))
        try check("after one whole migration")
        try fresh()
        var rounds = Rounds(wanted: (killed: 20, resumed: 3))
        while rounds.goOn {
            let round = rounds.round
            let output = try Self.interrupted(migrate, in: directory, pause: pause)
            if round % 20 == 19 || output != nil { try check("migrate round \(round)") }
            rounds.count(output)
            if output != nil { try fresh() }
        }
        print("store migrate kill -9: \(rounds.summary(pause: pause))")
        #expect(rounds.enough)
    }

    /// A sealed field's search value can come from a file, off the command
    /// line; given on the command line it works, with a warning.
    @Test func searchValuesFromFiles() throws {
        let directory = try StoreCLITests.setUp()
        StoreCLITests.ok(
            try StoreCLITests.store(["put", "--table", "presents"], directory, stdin: Array(Self.records().utf8)), "put"
        )
        try directory.write("wanted", Array("e17@x.org\n".utf8))
        let fromFile = try StoreCLITests.store(
            ["find", "--table", "presents", "--where-file", "email=wanted", "--where", "to=r7"], directory)
        StoreCLITests.ok(fromFile, "find --where-file")
        #expect(fromFile.stdoutText.split(separator: "\n").count == Self.rows / 50, "\(fromFile.stdoutText)")
        #expect(!fromFile.stderr.contains("warning"))
        let inline = try StoreCLITests.store(
            ["find", "--table", "presents", "--where", "email=e17@x.org", "--where", "to=r7"], directory)
        #expect(inline.stdoutText == fromFile.stdoutText)
        #expect(inline.stderr.contains("warning: the value for sealed field email is on the command line"))
        let neither = try StoreCLITests.store(["find", "--table", "presents"], directory)
        #expect(neither.status == 0 && neither.stdoutText.split(separator: "\n").count == Self.rows, "every record")
    }

    /// `put --batch N`: one transaction per batch; a bad line in the one
    /// batch of the default size refuses the whole file before any write.
    @Test func putInBatches() throws {
        let directory = try StoreCLITests.setUp()
        let put = try CLI.coffer(
            ["store", "put", "--db", "s.sqlite", "--kek-file", "kek", "--table", "presents", "--batch", "7"],
            stdin: Array(Self.records().utf8), in: directory.url)
        StoreCLITests.ok(put, "put --batch 7")
        #expect(put.stdoutText.split(separator: "\n").count == Self.rows)
        #expect(put.stdoutText.hasSuffix("{\"id\":\(Self.rows)}\n"))
        let bad = Self.records() + "{\"to\": 3}\n"
        let refused = try StoreCLITests.store(["put", "--table", "presents"], directory, stdin: Array(bad.utf8))
        #expect(refused.status != 0 && refused.stdoutText.isEmpty)
        #expect(try StoreCLITests.descriptions(directory, to: "r3").count == Self.rows / 10)
    }
}
