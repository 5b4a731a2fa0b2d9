import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` during tenants' first writes and during `shred-tenant`
/// (issue 58): three processes write a new tenant's first records at once
/// and are killed at random moments; a shred is killed likewise. No
/// acknowledged record of any tenant is lost or fails to open, a tenant
/// is whole or shredded — never a shredded tenant with records, nor a live
/// one missing what it acknowledged — and `verify` finds the record sets,
/// the key rows' included, agreeing with their digests.
@Suite(.serialized) struct StoreTenantKillCLITests {
    /// Starts every command at once, kills each after its own random pause;
    /// for each, nil when killed, else its status and standard output.
    static func runTogether(_ commands: [[String]], in directory: TemporaryDirectory) throws -> [(Int32, String)?] {
        var running: [(Process, URL)] = []
        for (number, arguments) in commands.enumerated() {
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments = arguments
            process.currentDirectoryURL = directory.url
            let out = directory.url.appendingPathComponent("out\(number)")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = FileHandle.nullDevice
            try process.run()
            running.append((process, out))
        }
        for (process, _) in running.shuffled() {
            usleep(useconds_t.random(in: 0...120_000))
            kill(process.processIdentifier, SIGKILL)
        }
        return try running.map { process, out in
            process.waitUntilExit()
            guard process.terminationReason == .exit else { return nil }
            return (process.terminationStatus, String(decoding: try Data(contentsOf: out), as: UTF8.self))
        }
    }

    /// Rounds of first writes of a new tenant (three processes) and, every
    /// fourth round, a shred of an earlier tenant; `count(org)` is the
    /// tenant's rows as the database's own tool counts them.
    static func rounds(
        _ options: [String], in directory: TemporaryDirectory, count: (String) throws -> Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (killed: Int, acknowledged: [String: [String]], shredded: Set<String>) {
        var killed = 0
        var acknowledged: [String: [String]] = [:]
        var shredded = Set<String>()
        for round in 0..<40 {
            let tenant = "t\(round)"
            var commands: [[String]] = []
            for writer in 0..<3 {
                let line =
                    #"{"org": "\#(tenant)", "name": "w\#(writer)", "email": "w\#(writer)@\#(tenant).example", "ssn": "\#(tenant)-\#(writer)"}"#
                try directory.write("record\(writer)", Array(line.utf8))
                commands.append(["store", "put", "--table", "people", "record\(writer)"] + options)
            }
            let victim = round % 4 == 3 ? acknowledged.keys.filter { !shredded.contains($0) }.randomElement() : nil
            if let victim {
                commands.append(["store", "shred-tenant", "--table", "people", "--tenant", victim] + options)
            }
            for (number, result) in try runTogether(commands, in: directory).enumerated() {
                guard let (status, _) = result else {
                    killed += 1
                    continue
                }
                #expect(status == 0, "round \(round), command \(number): \(status)", sourceLocation: sourceLocation)
                if number < 3, status == 0 { acknowledged[tenant, default: []].append("\(tenant)-\(number)") }
                if number == 3, status == 0, let victim { shredded.insert(victim) }
            }
            if let victim, !shredded.contains(victim) {
                // Killed: whole or shredded, never between.
                let find = try CLI.coffer(
                    ["store", "find", "--table", "people", "--where", "org=\(victim)"] + options, in: directory.url)
                if find.status == 0 {
                    for ssn in acknowledged[victim] ?? [] {
                        #expect(find.stdoutText.contains(ssn), "\(victim) lost \(ssn)", sourceLocation: sourceLocation)
                    }
                } else {
                    #expect(find.stderr.contains("shredded"), "\(find.stderr)", sourceLocation: sourceLocation)
                    #expect(try count(victim) == 0, "shredded \(victim) kept rows", sourceLocation: sourceLocation)
                    shredded.insert(victim)
                }
            }
        }
        return (killed, acknowledged, shredded)
    }

    static func check(
        _ options: [String], in directory: TemporaryDirectory, count: (String) throws -> Int,
        _ database: String
    ) throws {
        let (killed, acknowledged, shredded) = try rounds(options, in: directory, count: count)
        var lost: [String] = []
        for (tenant, ssns) in acknowledged where !shredded.contains(tenant) {
            let find = try CLI.coffer(
                ["store", "find", "--table", "people", "--where", "org=\(tenant)"] + options, in: directory.url)
            StoreCLITests.ok(find, "find \(tenant)")
            lost += ssns.filter { !find.stdoutText.contains($0) }
        }
        for tenant in shredded { #expect(try count(tenant) == 0, "shredded \(tenant) kept rows") }
        print(
            "store kill -9 on \(database), tenants' first writes and shreds: 40 rounds, \(killed) killed, \(shredded.count) shredded, lost \(lost.count)"
        )
        #expect(lost.isEmpty, "acknowledged records lost: \(lost)")
        #expect(killed >= 20)
        StoreCLITests.ok(
            try CLI.coffer(["store", "verify"] + options, in: directory.url), "verify after the kills")
    }

    @Test func firstWritesAndShredsKilledOnSQLite() throws {
        let directory = try StoreCLITests.setUp(schema: StoreTenantCLITests.schema)
        try Self.check(
            ["--db", "s.sqlite", "--kek-file", "kek"], in: directory,
            count: { tenant in
                Int(
                    try StoreTamperCLITests.sqlite("SELECT count(*) FROM people WHERE org = '\(tenant)'", directory)
                        .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            }, "SQLite")
    }

    #if Server
    @Test(.enabled(if: StorePostgresCLITests.available)) func firstWritesAndShredsKilledOnPostgres() throws {
        let (directory, options) = try StorePostgresCLITests.setUp(
            "cli_tenant_kill", schema: StoreTenantCLITests.schema)
        try Self.check(
            options, in: directory,
            count: { tenant in
                let result = try StorePostgresCLITests.psql(
                    "SELECT count(*) FROM cli_tenant_kill.people WHERE org = '\(tenant)'")
                return Int(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            }, "PostgreSQL")
    }
    #endif
}
