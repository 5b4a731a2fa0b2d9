import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `coffer store` from the command line: the seed's presents, four
/// processes writing at once, and `kill -9` during writes.
@Suite(.serialized) struct StoreCLITests {
    static func ok(_ result: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            result.status == 0, "\(what) failed (\(result.status)): \(result.stderr)", sourceLocation: sourceLocation)
    }

    static let schema = """
        {"tables": [{"name": "presents", "primaryKey": "id",
          "fields": [{"name": "id", "type": "integer"},
                     {"name": "to", "type": "text"},
                     {"name": "description", "type": "text", "sealed": true, "bind": ["to"]},
                     {"name": "email", "type": "text", "sealed": true,
                      "indexes": [{"name": "email_exact", "transforms": ["trim", "lowercase"], "bits": 16}]}]}]}
        """

    /// A store under a KEK file (no scrypt per process).
    static func setUp(schema: String = schema) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        try directory.write("kek", (0..<32).map { UInt8($0 * 7 & 0xff) })
        try directory.write("schema.json", Array(schema.utf8))
        ok(
            try CLI.coffer(
                ["store", "init", "--db", "s.sqlite", "--schema", "schema.json", "--kek-file", "kek"], in: directory.url
            ),
            "store init")
        return directory
    }

    static func store(_ arguments: [String], _ directory: TemporaryDirectory, stdin: [UInt8] = []) throws -> CLI.Result
    {
        try CLI.coffer(
            ["store"] + arguments + ["--db", "s.sqlite", "--kek-file", "kek"], stdin: stdin, in: directory.url)
    }

    static func descriptions(_ directory: TemporaryDirectory, to: String) throws -> [String] {
        let found = try store(["find", "--table", "presents", "--where", "to=\(to)"], directory)
        ok(found, "find")
        return found.stdoutText.split(separator: "\n").map(String.init)
    }

    @Test func seedFlow() throws {
        let directory = try Self.setUp()
        let put = try Self.store(
            ["put", "--table", "presents"], directory,
            stdin: Array(#"{"to": "Grandma", "description": "a knitted scarf", "email": " Gran@Example.com"}"#.utf8))
        Self.ok(put, "put")
        #expect(put.stdoutText == "{\"id\":1}\n")
        let lines = Array(
            "{\"to\": \"Sam\", \"description\": \"kite\"}\n{\"to\": \"Grandma\", \"description\": \"tea\"}\n".utf8)
        #expect(
            try Self.store(["put", "--table", "presents"], directory, stdin: lines).stdoutText
                == "{\"id\":2}\n{\"id\":3}\n")
        #expect(try Self.descriptions(directory, to: "Grandma").count == 2)
        let byEmail = try Self.store(["find", "--table", "presents", "--where", "email=gran@example.com"], directory)
        #expect(byEmail.stdoutText.contains("a knitted scarf") && byEmail.stdoutText.split(separator: "\n").count == 1)
        #expect(try Self.store(["get", "--table", "presents", "--id", "2"], directory).stdoutText.contains("\"kite\""))
        #expect(try Self.store(["get", "--table", "presents", "--id", "99"], directory).status == 1)
        let update = try Self.store(
            ["update", "--table", "presents", "--id", "2"], directory, stdin: Array(#"{"to": "Samira"}"#.utf8))
        #expect(
            update.stdoutText == #"{"id":2,"to":"Samira","description":"kite","email":null}"# + "\n", "\(update.stderr)"
        )
        #expect(try Self.descriptions(directory, to: "Samira").count == 1)
        // Bad input: a clear error and a usage status, nothing written.
        for bad in [#"{"to": 5}"#, #"{"colour": "red"}"#, "not json", #"[1, 2]"#, #"{"id": 1.5}"#, #"{"id": true}"#] {
            let result = try Self.store(["put", "--table", "presents"], directory, stdin: Array(bad.utf8))
            #expect(result.status != 0 && result.stderr.hasPrefix("coffer: error:"), "\(bad): \(result.stderr)")
        }
        // A batch with one bad line writes none of it.
        let mixed = Array("{\"to\": \"A\"}\n{\"to\": 7}\n".utf8)
        #expect(try Self.store(["put", "--table", "presents"], directory, stdin: mixed).status != 0)
        #expect(try Self.descriptions(directory, to: "A").isEmpty)
        // The passphrase is the only way in; the sealed text is not in the file.
        let bytes = try Data(contentsOf: directory.url.appendingPathComponent("s.sqlite"))
        #expect(bytes.range(of: Data("knitted".utf8)) == nil)
        try directory.write("other", (0..<32).map { UInt8($0) })
        let wrong = try CLI.coffer(
            ["store", "get", "--db", "s.sqlite", "--kek-file", "other", "--table", "presents", "--id", "1"],
            in: directory.url)
        #expect(wrong.status == 2 && !wrong.stdoutText.contains("scarf"))
    }

    /// `coffer tour` ends with the seed's presents list, with no server and no configuration.
    @Test func tourShowsThePresents() throws {
        let tour = try CLI.coffer(["tour"])
        Self.ok(tour, "tour")
        for line in [
            "listed the presents to Grandma", "a knitted scarf, jasmine tea", "through the shop's blind index",
            "a wrong passphrase opens nothing",
        ] {
            #expect(tour.stdoutText.contains(line), "\(tour.stdoutText)")
        }
    }

    /// Four processes add 60 records each at once: all 240 are there.
    @Test func fourWritersLoseNothing() throws {
        let directory = try Self.setUp()
        let processes = try (0..<4).map { worker -> Process in
            let lines = (0..<60).map { "{\"to\": \"w\(worker)\", \"description\": \"d\($0)\"}\n" }.joined()
            try directory.write("batch\(worker)", Array(lines.utf8))
            let process = Process()
            process.executableURL = CLI.binary
            process.currentDirectoryURL = directory.url
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            // One record per transaction here: 60 separate puts per process.
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = [
                "-c",
                "while IFS= read -r line; do printf '%s' \"$line\" | \"$0\" store put --db s.sqlite --kek-file kek --table presents || exit 1; done < batch\(worker)",
                CLI.binary.path,
            ]
            try process.run()
            return process
        }
        for process in processes {
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        for worker in 0..<4 { #expect(try Self.descriptions(directory, to: "w\(worker)").count == 60) }
    }

    /// `kill -9` at random moments during puts: every acknowledged record
    /// is there and opens, and the store keeps working.
    @Test func killNineDuringPuts() throws {
        let directory = try Self.setUp()
        var acknowledged: [String] = []
        var killed = 0
        for round in 0..<100 {
            try directory.write("record", Array("{\"to\": \"k\", \"description\": \"round \(round)\"}".utf8))
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments = [
                "store", "put", "--db", "s.sqlite", "--kek-file", "kek", "--table", "presents", "record",
            ]
            process.currentDirectoryURL = directory.url
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(useconds_t.random(in: 0...300_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if process.terminationReason == .exit && process.terminationStatus == 0 {
                acknowledged.append("round \(round)")
            } else {
                killed += 1
            }
        }
        let present = try Self.descriptions(directory, to: "k").joined(separator: "\n")
        let lost = acknowledged.filter { !present.contains("\"\($0)\"") }
        print("store kill -9: 100 rounds, \(killed) killed, \(acknowledged.count) acknowledged, lost \(lost.count)")
        #expect(lost.isEmpty, "acknowledged records lost: \(lost)")
        Self.ok(
            try Self.store(["put", "--table", "presents"], directory, stdin: Array(#"{"to": "after"}"#.utf8)),
            "put after")
    }
}
