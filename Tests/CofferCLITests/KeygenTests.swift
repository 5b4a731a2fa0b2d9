import Foundation
import Testing

@Suite struct KeygenTests {
    @Test(arguments: [
        ("x25519", "age1", "AGE-SECRET-KEY-1"), ("mlkem768x25519", "age1pq1", "AGE-SECRET-KEY-PQ-1"),
        ("p256", "age1tag1", "-----BEGIN PRIVATE KEY-----"),
    ])
    func everyTypeMakesAPrivateFileThatOpensWhatItsRecipientSeals(
        type: String, recipientPrefix: String, secretMarker: String
    ) throws {
        let directory = try TemporaryDirectory()
        let made = try CLI.coffer(["keygen", "--type", type, "-o", "key"], in: directory.url)
        #expect(made.status == 0)
        #expect(made.stderr.hasPrefix("Public key: \(recipientPrefix)"))
        let mode = try FileManager.default.attributesOfItem(atPath: directory.path("key"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(String(decoding: try directory.read("key"), as: UTF8.self).contains(secretMarker))
        let recipient = try CLI.coffer(["keygen", "-y", "key"], in: directory.url).stdoutText.trimmingCharacters(
            in: .newlines)
        #expect(made.stderr == "Public key: \(recipient)\n")
        try directory.write("plain", pattern(70_000))
        #expect(
            try CLI.coffer(["encrypt", "-r", recipient, "-o", "plain.age", "plain"], in: directory.url).status == 0)
        let opened = try CLI.coffer(["decrypt", "-i", "key", "plain.age"], in: directory.url)
        #expect(opened.status == 0 && opened.stdout == pattern(70_000))
        // Never overwrites.
        #expect(try CLI.coffer(["keygen", "--type", type, "-o", "key"], in: directory.url).status == 6)
    }
}
