import Foundation
import Testing

/// The CLI as a user sees it: `--help` and every error path, compared as
/// whole transcripts.
@Suite struct TranscriptTests {
    static let commands = [
        "", "encrypt", "decrypt", "keygen", "rekey", "inspect", "hash", "hmac", "tour", "tour presents", "tour server",
        "rsa", "rsa encrypt", "rsa decrypt", "agree", "sign", "verify", "key", "key show", "key convert",
        "apple", "apple encrypt", "apple decrypt", "apple key-exchange", "rncryptor", "rncryptor encrypt",
        "rncryptor decrypt", "legacy", "legacy decrypt", "cryptokit", "cryptokit seal", "cryptokit open", "convert",
        "keyring", "keyring new", "keyring rotate", "keyring list", "keyring disable", "keyring enable",
        "keyring destroy",
        "keyring passwd", "keyring accept-rollback",
        "keyring upgrade", "seal", "open", "rewrap", "keychain", "keychain create", "keychain list",
        "keychain add-identity",
        "keychain add-password", "keychain get-password", "keychain update-password", "keychain delete",
        "keychain generate-key", "keychain public-key", "keychain rsa-decrypt", "keychain agree", "keychain encrypt-to",
        "keychain decrypt-from", "keychain passwd", "keychain accept-rollback",
        "store", "store init", "store put", "store get", "store find", "store update", "store delete", "store verify",
        "store plan", "store rotate", "store reindex", "store migrate", "store accept-rollback", "store alter",
        "store import", "store passwd", "store slots", "store add-slot", "store remove-slot", "store watch",
        "store shred-tenant",
        "server-key",
        "server-key get",
        "server-key rotate", "server-key retire", "server-key shred", "server-key undo-shred", "server-key show",
        "server-key subjects",
    ]

    @Test(arguments: commands)
    func help(_ command: String) throws {
        let arguments = command.split(separator: " ").map(String.init) + ["--help"]
        let name = command.isEmpty ? "coffer" : command.replacingOccurrences(of: " ", with: "-")
        try Transcript.check("help-\(name)", "coffer \(arguments.joined(separator: " "))", CLI.coffer(arguments))
    }

    /// The public-key commands' failures: each says what was expected.
    @Test func publicKeyErrorPaths() throws {
        let fixture = try Fixture()
        let directory = fixture.directory
        try #require(CLI.coffer(["keygen", "--type", "ed25519", "-o", "ed.key"], in: directory.url).status == 0)
        try #require(CLI.coffer(["keygen", "--type", "p256", "-o", "p256.pem"], in: directory.url).status == 0)
        try directory.write("sig", [UInt8](repeating: 1, count: 64))
        try directory.write("pw", Array("pw\n".utf8))
        try fixture.check("rsa-encrypt-not-rsa", ["rsa", "encrypt", "-k", "ed.key", "-o", "out", "plain.txt"])
        try fixture.check("agree-not-ecdh", ["agree", "--private", "ed.key", "--peer", "p256.pem"])
        try fixture.check("agree-other-curve", ["agree", "--private", "p256.pem", "--peer", "ed.key"])
        try fixture.check("agree-raw-to-terminal", ["agree", "--private", "p256.pem", "--peer", "p256.pem", "--raw"])
        try fixture.check("verify-invalid", ["verify", "-k", "ed.key", "-s", "sig", "plain.txt"])
        try fixture.check("sign-not-a-key", ["sign", "-k", "plain.txt", "-o", "out", "plain.txt"])
        try fixture.check("key-convert-impossible", ["key", "convert", "--to", "pkcs1", "-o", "out", "ed.key"])
        try fixture.check("decrypt-identity-not-age", ["decrypt", "-i", "plain.txt", "-o", "out", "file.age"])
        // The compatibility formats.
        try fixture.check(
            "apple-unknown-algorithm",
            ["apple", "decrypt", "--algorithm", "eciesEncryptionX963SHA256AESGCM", "--key", "p256.pem", "file.age"])
        try fixture.check(
            "apple-rsa-sha384",
            ["apple", "encrypt", "--algorithm", "rsaEncryptionOAEPSHA384AESGCM", "--key", "p256.pem", "plain.txt"])
        try fixture.check(
            "apple-wrong-key-kind",
            ["apple", "decrypt", "--algorithm", "rsaEncryptionOAEPSHA256AESGCM", "--key", "p256.pem", "file.age"])
        try fixture.check(
            "apple-not-ecies",
            [
                "apple", "decrypt", "--algorithm", "eciesEncryptionCofactorX963SHA256AESGCM", "--key", "p256.pem", "-o",
                "out", "plain.txt",
            ])
        try fixture.check(
            "rncryptor-not-rncryptor", ["rncryptor", "decrypt", "--passphrase-file", "pw", "-o", "out", "file.age"])
        try directory.write("ck.key", [UInt8](repeating: 1, count: 31))
        try fixture.check(
            "cryptokit-short-key", ["cryptokit", "open", "--cipher", "aesgcm", "--key-file", "ck.key", "file.age"])
        try fixture.check(
            "legacy-not-a-dictionary", ["legacy", "decrypt", "--mode", "cbc", "--passphrase-file", "pw", "plain.txt"])
        try fixture.check(
            "convert-no-recipient", ["convert", "--from", "rncryptor", "--passphrase-file", "pw", "file.age"])
    }

    /// Runs coffer in a directory holding an identity, a second identity
    /// and a small encrypted file, and checks the transcript.
    struct Fixture {
        let directory: TemporaryDirectory
        let recipient: String

        init() throws {
            directory = try TemporaryDirectory()
            try #require(CLI.coffer(["keygen", "-o", "key.txt"], in: directory.url).status == 0)
            try #require(CLI.coffer(["keygen", "-o", "other.txt"], in: directory.url).status == 0)
            recipient = try CLI.coffer(["keygen", "-y", "key.txt"], in: directory.url).stdoutText.trimmingCharacters(
                in: .newlines)
            try directory.write("plain.txt", Array("attack at dawn\n".utf8))
            try #require(
                CLI.coffer(["encrypt", "-r", recipient, "-o", "file.age", "plain.txt"], in: directory.url).status == 0)
        }

        func check(
            _ name: String, _ arguments: [String], stdin: [UInt8] = [],
            sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            let result = try CLI.coffer(arguments, stdin: stdin, in: directory.url)
            try Transcript.check(
                name, "coffer \(arguments.joined(separator: " "))", result,
                replacing: [directory.url.path: "$DIR", recipient: "$RECIPIENT"], sourceLocation: sourceLocation)
            // A failed command leaves no output file and no temporary file.
            if result.status != 0 {
                let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
                    .filter { $0.contains(".coffer-") || $0 == "out" }
                #expect(leftovers.isEmpty, "left behind: \(leftovers)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func successfulRoundTrip() throws {
        let fixture = try Fixture()
        try fixture.check("decrypt-success", ["decrypt", "-i", "key.txt", "file.age"])
        try fixture.check("inspect", ["inspect", "file.age"])
        try fixture.check("inspect-json", ["inspect", "--json", "file.age"])
    }

    @Test func errorPaths() throws {
        let fixture = try Fixture()
        let directory = fixture.directory
        // Usage.
        try fixture.check("encrypt-no-recipient", ["encrypt", "plain.txt"])
        try fixture.check("encrypt-passphrase-and-recipient", ["encrypt", "-p", "-r", fixture.recipient, "plain.txt"])
        try fixture.check("unknown-command", ["frobnicate"])
        try fixture.check("rekey-no-identity", ["rekey", "-r", fixture.recipient, "file.age"])
        // Files.
        try fixture.check("decrypt-missing-identity-file", ["decrypt", "-i", "missing.txt", "file.age"])
        try fixture.check("decrypt-missing-input", ["decrypt", "-i", "key.txt", "-o", "out", "missing.age"])
        try fixture.check("keygen-existing", ["keygen", "-o", "key.txt"])
        try fixture.check("encrypt-bad-recipient", ["encrypt", "-r", "age1notarecipient", "plain.txt"])
        try directory.write("bad-key.txt", Array("# comment\nAGE-SECRET-KEY-1QQQQ\n".utf8))
        try fixture.check("decrypt-bad-identity-file", ["decrypt", "-i", "bad-key.txt", "file.age"])
        // Decryption failures, one per exit status.
        try fixture.check("decrypt-wrong-identity", ["decrypt", "-i", "other.txt", "-o", "out", "file.age"])
        var tampered = try directory.read("file.age")
        tampered[tampered.count - 3] ^= 1
        try directory.write("tampered.age", tampered)
        try fixture.check("decrypt-tampered", ["decrypt", "-i", "key.txt", "-o", "out", "tampered.age"])
        try directory.write("truncated.age", try directory.read("file.age").dropLast(20))
        try fixture.check("decrypt-truncated", ["decrypt", "-i", "key.txt", "-o", "out", "truncated.age"])
        try fixture.check("decrypt-not-age", ["decrypt", "-i", "key.txt", "-o", "out", "plain.txt"])
        try directory.write("v2.age", Array("age-encryption.org/v2\n".utf8))
        try fixture.check("decrypt-unsupported-version", ["decrypt", "-i", "key.txt", "-o", "out", "v2.age"])
        try directory.write("pw", Array("right\n".utf8))
        try directory.write("wrong-pw", Array("wrong\n".utf8))
        try directory.write("empty-pw", [])
        try fixture.check(
            "encrypt-empty-passphrase-file", ["encrypt", "--passphrase-file", "empty-pw", "-o", "out", "plain.txt"])
        // Digests.
        try fixture.check("hash-sha256", ["hash", "plain.txt"])
        try fixture.check("hash-md5", ["hash", "--algorithm", "md5", "plain.txt"])
        try fixture.check("hash-stdin", ["hash", "--algorithm", "sha512"], stdin: Array("abc".utf8))
        try directory.write("short.key", [UInt8](repeating: 1, count: 8))
        try fixture.check("hmac-short-key", ["hmac", "--key-file", "short.key", "plain.txt"])
        try directory.write("hmac.key", [UInt8](repeating: 0x0b, count: 20))
        try fixture.check("hmac-sha256", ["hmac", "--key-file", "hmac.key"], stdin: Array("Hi There".utf8))
    }

    @Test func wrongPassphrase() throws {
        let fixture = try Fixture()
        try fixture.directory.write("pw", Array("right\n".utf8))
        try fixture.directory.write("wrong-pw", Array("wrong\n".utf8))
        try #require(
            CLI.coffer(["encrypt", "--passphrase-file", "pw", "-o", "pw.age", "plain.txt"], in: fixture.directory.url)
                .status == 0)
        try fixture.check(
            "decrypt-wrong-passphrase", ["decrypt", "--passphrase-file", "wrong-pw", "-o", "out", "pw.age"])
        try fixture.check("decrypt-right-passphrase", ["decrypt", "--passphrase-file", "pw", "pw.age"])
    }

    /// Without a terminal, a passphrase prompt fails with a hint, and binary
    /// output to a terminal is refused. `setsid` detaches from any terminal;
    /// `script` provides one.
    @Test func terminalRules() throws {
        let fixture = try Fixture()
        let coffer = CLI.binary.path
        let noTerminal = try CLI.run(
            "/usr/bin/setsid", ["-w", coffer, "encrypt", "-p", "plain.txt"], in: fixture.directory.url)
        try Transcript.check("encrypt-passphrase-no-terminal", "setsid coffer encrypt -p plain.txt", noTerminal)
        let onTerminal = try CLI.run(
            "/usr/bin/script",
            ["-qec", "\(coffer) encrypt -r \(fixture.recipient) plain.txt; echo status=$?", "/dev/null"],
            in: fixture.directory.url)
        let output = onTerminal.stdoutText.replacingOccurrences(of: "\r\n", with: "\n")
        #expect(
            output
                == "coffer: error: refusing to output binary to the terminal\ncoffer: hint: did you mean to use -a/--armor, or -o FILE?\nstatus=6\n"
        )
    }
}
