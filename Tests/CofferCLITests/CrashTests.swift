import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Output files survive `kill -9` at any moment and concurrent writers:
/// the destination is always absent, its previous complete contents, or
/// new complete contents; never a part.
@Suite(.serialized) struct CrashTests {
    struct Setup {
        let directory: TemporaryDirectory
        let recipient: String
        init(inputs: Int, size: Int) throws {
            directory = try TemporaryDirectory()
            try #require(CLI.coffer(["keygen", "-o", "key.txt"], in: directory.url).status == 0)
            recipient = try CLI.coffer(["keygen", "-y", "key.txt"], in: directory.url).stdoutText.trimmingCharacters(
                in: .newlines)
            for index in 0..<inputs { try directory.write("in\(index)", pattern(size, seed: UInt32(index + 11))) }
        }

        func start(_ arguments: [String]) throws -> Process {
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments = arguments
            process.currentDirectoryURL = directory.url
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }

        /// Which input `out.age` decrypts to, nil when it does not exist;
        /// records an issue when it exists but is not a whole file.
        func verifyOutput(_ inputs: Int, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int? {
            guard directory.exists("out.age") else { return nil }
            let result = try CLI.coffer(["decrypt", "-i", "key.txt", "out.age"], in: directory.url)
            #expect(result.status == 0, "out.age is damaged: \(result.stderr)", sourceLocation: sourceLocation)
            for index in 0..<inputs where try result.stdout == directory.read("in\(index)") { return index }
            Issue.record("out.age decrypts to none of the inputs", sourceLocation: sourceLocation)
            return nil
        }
    }

    /// 40 rounds of killing an encryption at increasing delays, over an
    /// output that earlier rounds may have completed.
    @Test func killNineDuringEncryption() throws {
        let setup = try Setup(inputs: 1, size: 24 << 20)
        var killed = 0
        var completed = 0
        for round in 0..<40 {
            let process = try setup.start(["encrypt", "-r", setup.recipient, "-o", "out.age", "in0"])
            usleep(useconds_t((round * 9_000) % 250_000))  // fault injection, not synchronisation
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if process.terminationReason == .uncaughtSignal { killed += 1 } else { completed += 1 }
            let before = completed
            let found = try setup.verifyOutput(1)
            // Once a run has completed, its output may never disappear.
            if before > 0 { #expect(found == 0, "round \(round): a completed output was lost") }
        }
        print("kill -9 rounds: 40, killed mid-run: \(killed), completed: \(completed)")
        #expect(killed > 0)
    }

    /// Six writers at once on one output, two of them killed: the survivor
    /// is one writer's whole file.
    @Test func concurrentWritersToOneOutput() throws {
        let setup = try Setup(inputs: 6, size: 3 << 20)
        for round in 0..<5 {
            let processes = try (0..<6).map {
                try setup.start(["encrypt", "-r", setup.recipient, "-o", "out.age", "in\($0)"])
            }
            usleep(useconds_t(5_000 * round))
            kill(processes[1].processIdentifier, SIGKILL)
            kill(processes[4].processIdentifier, SIGKILL)
            processes.forEach { $0.waitUntilExit() }
            let succeeded = processes.indices.filter {
                processes[$0].terminationReason == .exit && processes[$0].terminationStatus == 0
            }
            let winner = try setup.verifyOutput(6)
            #expect(
                winner.map(succeeded.contains) ?? false, "round \(round): out.age is not from a writer that succeeded")
        }
    }

    /// A decryption that fails midway leaves no output at all, even over a
    /// file that existed: the old contents stay.
    @Test func failedDecryptionKeepsTheOldOutput() throws {
        let setup = try Setup(inputs: 1, size: 1 << 20)
        try #require(
            CLI.coffer(["encrypt", "-r", setup.recipient, "-o", "good.age", "in0"], in: setup.directory.url).status == 0
        )
        var bad = try setup.directory.read("good.age")
        bad[bad.count - 100] ^= 0x01
        try setup.directory.write("bad.age", bad)
        try setup.directory.write("plain.out", Array("previous contents".utf8))
        let result = try CLI.coffer(
            ["decrypt", "-i", "key.txt", "-o", "plain.out", "bad.age"], in: setup.directory.url)
        #expect(result.status == 3)
        #expect(try setup.directory.read("plain.out") == Array("previous contents".utf8))
    }
}
