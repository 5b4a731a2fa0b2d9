import Foundation
import Testing

/// What `coffer decrypt` says when a file is cut short or damaged, for a
/// file output (nothing kept) and for standard output (what already went
/// out is counted, and the user is told to discard it).
@Suite struct DecryptFailureCLITests {
    @Test func aCutFileSaysTruncatedAndCountsWhatWentToStandardOutput() throws {
        let directory = try TemporaryDirectory()
        let key = try CLI.coffer(["keygen", "-o", "key.txt"], in: directory.url)
        #expect(key.status == 0, "\(key.stderr)")
        let recipient = try #require(
            key.stderr.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        _ = try directory.write("plain.bin", (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let encrypted = try CLI.coffer(["encrypt", "-r", recipient, "-o", "file.age", "plain.bin"], in: directory.url)
        #expect(encrypted.status == 0, "\(encrypted.stderr)")
        // Cut in the middle of the third 64 KiB chunk.
        _ = try directory.write("cut.age", try directory.read("file.age").prefix(150_000))

        let piped = try CLI.coffer(["decrypt", "-i", "key.txt", "cut.age"], in: directory.url)
        #expect(piped.status == 3)
        #expect(piped.stdout.count == 131_072)
        #expect(Array(piped.stdout) == Array(try directory.read("plain.bin").prefix(131_072)))
        #expect(piped.stderr.contains("the file's last, failed to authenticate"), "\(piped.stderr)")
        #expect(piped.stderr.contains("the file is truncated"))
        #expect(piped.stderr.contains("131072 bytes of plaintext"), "\(piped.stderr)")
        #expect(piped.stderr.contains("discard what standard output received"), "\(piped.stderr)")
        #expect(!piped.stderr.contains("no output was kept"))

        let filed = try CLI.coffer(["decrypt", "-i", "key.txt", "-o", "out.bin", "cut.age"], in: directory.url)
        #expect(filed.status == 3)
        #expect(filed.stderr.contains("the file is truncated"))
        #expect(filed.stderr.contains("no output was kept"), "\(filed.stderr)")
        #expect(!filed.stderr.contains("bytes of plaintext"))
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("out.bin").path))
    }
}
