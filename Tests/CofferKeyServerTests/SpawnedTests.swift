#if Server
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The tests' own way to run a program to its end (Spawned.swift).
@Suite struct SpawnedTests {
    /// A megabyte through `cat` and back (more than a pipe holds, both
    /// ways at once), the errors apart, the exit status and a signal.
    @Test func inputOutputErrorsAndStatus() throws {
        let input = Data((0..<1_048_576).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let echoed = try Spawned.run("/bin/sh", ["-c", "cat; echo said >&2; exit 3"], input: input, errors: .capture)
        #expect(echoed.status == 3)
        #expect(echoed.output == input)
        #expect(echoed.errorText == "said\n")
        let merged = try Spawned.run("/bin/sh", ["-c", "echo out; echo err >&2"], mergeErrors: true)
        #expect(merged.text == "out\nerr\n")
        #expect(try Spawned.run("/bin/sh", ["-c", "kill -9 $$"]).status == 128 + 9)
        // This process ignores SIGPIPE once it has written to a child; the
        // child does not (SigIgn's bit 12 is SIGPIPE, signal 13).
        #expect(try Spawned.run("/bin/sh", ["-c", "true"], input: Data("x".utf8)).status == 0)
        let ignored = try Spawned.run("/bin/sh", ["-c", "sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status"]).text
        #expect(UInt64(ignored.trimmingCharacters(in: .whitespacesAndNewlines), radix: 16).map { $0 & 0x1000 } == 0)
        #expect(
            try Spawned.run("/bin/sh", ["-c", "echo $COFFER_SPAWNED"], environment: ["COFFER_SPAWNED": "yes"]).text
                == "yes\n")
    }

    /// A descriptor this process holds without close-on-exec does not
    /// reach the child: only its three standard ones do.
    @Test func theChildHoldsOnlyItsStandardDescriptors() throws {
        let fd = open("/dev/null", O_RDONLY)
        try #require(fd >= 3)
        defer { close(fd) }
        let listed = try Spawned.run("/bin/sh", ["-c", "ls /proc/$$/fd"], errors: .discard)
        let held = Set(listed.text.split(separator: "\n").map(String.init))
        #expect(held == ["0", "1", "2"], "\(held)")
    }
}
#endif
