import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Crashes never cry wolf (issue 57, part 7): `kill -9` at random moments
/// of puts, updates and deletes — each a commit that changes the record
/// set's digest, then a publication to the state folder's anchor — on
/// SQLite and on PostgreSQL. A command that was not killed never fails (a
/// false rollback would: status 3), no acknowledged record is lost, and at
/// the end `verify` finds the digest, the rows and the anchor agreeing.
/// 100 killed rounds on each database here, beside
/// `StoreCLITests.killNineDuringPuts` and the jobs' kill tests.
@Suite(.serialized) struct StoreKillCLITests {
    /// One command, killed after a random pause: nil when killed, else its
    /// status and standard output and error.
    static func run(_ arguments: [String], in directory: TemporaryDirectory) throws -> (Int32, String, String)? {
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = arguments
        process.currentDirectoryURL = directory.url
        let (out, err) = (directory.url.appendingPathComponent("out"), directory.url.appendingPathComponent("err"))
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        usleep(useconds_t.random(in: 0...150_000))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        guard process.terminationReason == .exit else { return nil }
        return (
            process.terminationStatus, String(decoding: try Data(contentsOf: out), as: UTF8.self),
            String(decoding: try Data(contentsOf: err), as: UTF8.self)
        )
    }

    /// Puts, updates and deletes in turn on the store `options` name,
    /// until 100 of them were killed (at most 400 rounds); returns the
    /// rounds run and killed, and the acknowledged puts no later round touched.
    static func rounds(
        options: [String], in directory: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (rounds: Int, killed: Int, kept: [String]) {
        var killed = 0
        var acknowledged: [(id: String, text: String)] = []
        var touched = Set<String>()
        var round = 0
        while killed < 100 && round < 400 {
            defer { round += 1 }
            var arguments = ["store"]
            switch round % 4 {
            case 3 where !acknowledged.isEmpty:
                let victim = acknowledged.randomElement()!.id
                touched.insert(victim)
                arguments += ["delete", "--table", "presents", "--id", victim]
            case 2 where !acknowledged.isEmpty:
                let target = acknowledged.randomElement()!.id
                touched.insert(target)
                try directory.write("change", Array(#"{"description": "changed in round \#(round)"}"#.utf8))
                arguments += ["update", "--table", "presents", "--id", target, "change"]
            default:
                try directory.write("record", Array(#"{"to": "k", "description": "round \#(round)"}"#.utf8))
                arguments += ["put", "--table", "presents", "record"]
            }
            guard let (status, out, err) = try run(arguments + options, in: directory) else {
                killed += 1
                continue
            }
            // A delete of a record a killed round already deleted finds none (1).
            #expect(
                status == 0 || (arguments[1] != "put" && status == 1),
                "round \(round) \(arguments[1]): \(status) \(err)",
                sourceLocation: sourceLocation)
            if arguments[1] == "put", status == 0, let id = out.split(separator: ":").last?.dropLast(2) {
                acknowledged.append((String(id), "round \(round)"))
            }
        }
        return (round, killed, acknowledged.filter { !touched.contains($0.id) }.map(\.text))
    }

    @Test func putsUpdatesAndDeletesKilledOnSQLite() throws {
        let directory = try StoreCLITests.setUp()
        let options = ["--db", "s.sqlite", "--kek-file", "kek"]
        let (rounds, killed, kept) = try Self.rounds(options: options, in: directory)
        let present = try StoreCLITests.descriptions(directory, to: "k").joined(separator: "\n")
        let lost = kept.filter { !present.contains("\"\($0)\"") }
        print(
            "store kill -9 on SQLite, puts, updates and deletes: \(rounds) rounds, \(killed) killed, lost \(lost.count)"
        )
        #expect(lost.isEmpty, "acknowledged records lost: \(lost)")
        #expect(killed >= 100)
        StoreCLITests.ok(try StoreCLITests.store(["verify"], directory), "verify after the kills")
    }

    #if Server
    @Test(.enabled(if: StorePostgresCLITests.available)) func putsUpdatesAndDeletesKilledOnPostgres() throws {
        let (directory, options) = try StorePostgresCLITests.setUp("cli_kill_writes")
        let (rounds, killed, kept) = try Self.rounds(options: options, in: directory)
        let found = try StorePostgresCLITests.run(
            ["find", "--table", "presents", "--where", "to=k"], options, directory)
        StoreCLITests.ok(found, "find")
        let lost = kept.filter { !found.stdoutText.contains("\"\($0)\"") }
        print(
            "store kill -9 on PostgreSQL, puts, updates and deletes: \(rounds) rounds, \(killed) killed, lost \(lost.count)"
        )
        #expect(lost.isEmpty, "acknowledged records lost: \(lost)")
        #expect(killed >= 100)
        StoreCLITests.ok(try StorePostgresCLITests.run(["verify"], options, directory), "verify after the kills")
    }
    #endif
}
