import Foundation
import Testing

/// The fuzz harness in the plain build: every target named, each fed its
/// seeds (Coffer's own writers' and the suites' vectors) and every input
/// kept in fuzz/regressions/, without a finding. fuzz/run.sh fuzzes them.
@Suite struct FuzzReplayCLITests {
    static let harness = CLI.binary.deletingLastPathComponent().appendingPathComponent("coffer-fuzz").path

    /// The parsers the fourth security review asked to be fuzzed, each a target.
    static let expected = [
        "age", "key-files", "sealed", "keychain", "rncryptor", "seckey", "recipe", "plist", "store-schema",
        "store-records", "anchor-state", "postgres-url", "server-bodies", "sign-in", "dpop", "client-answers",
    ]

    @Test func everyTargetReplaysItsSeedsAndRegressionsWithoutAFinding() throws {
        let listed = try CLI.run(Self.harness, ["--list"])
        #expect(listed.status == 0)
        let names = listed.stdoutText.split(separator: "\n").map { String($0.prefix { $0 != "\t" }) }
        #expect(names == Self.expected)

        let folder = try TemporaryDirectory()
        #expect(try CLI.run(Self.harness, ["--seeds", folder.url.path]).status == 0)
        let vectors = try CLI.run(
            "/usr/bin/env",
            ["python3", CLI.packageRoot.appendingPathComponent("fuzz/seed-vectors.py").path, folder.url.path])
        #expect(vectors.status == 0, "\(vectors.stderr)")
        let regressions = CLI.packageRoot.appendingPathComponent("fuzz/regressions")
        for name in names {
            var inputs: [String] = []
            for source in [folder.url.appendingPathComponent(name), regressions.appendingPathComponent(name)] {
                let files = (try? FileManager.default.contentsOfDirectory(atPath: source.path)) ?? []
                inputs += files.sorted().map { source.appendingPathComponent($0).path }
            }
            #expect(!inputs.isEmpty, "no seed for \(name)")
            let replay = try CLI.run(Self.harness, [name] + inputs)
            #expect(replay.status == 0, "\(name): \(replay.stderr)")
            #expect(replay.stdoutText.contains("replayed \(inputs.count) inputs through \(name) without a finding"))
        }
    }

    @Test func anUnknownTargetIsRefusedByName() throws {
        let result = try CLI.run(Self.harness, ["no-such-target", "/dev/null"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("no target no-such-target"))
    }
}
