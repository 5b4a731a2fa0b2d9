import Foundation
import Testing

/// `coffer store` checks what it was given before it derives the store's
/// key (seconds with scrypt): a malformed file is said at once. Shown by a
/// passphrase file that does not exist: it is read only when the store
/// is opened, so its error would come first if the input were not.
@Suite struct StoreInputCLITests {
    @Test func malformedInputIsRefusedBeforeTheStoreIsOpened() throws {
        let directory = try StoreCLITests.setUp()
        _ = try directory.write("bad.json", Array("{\"to\": \"Sam\" \"description\": \"kite\"}\n".utf8))
        _ = try directory.write(
            "good-then-bad.json", Array("{\"to\": \"Sam\", \"description\": \"kite\"}\n{oops\n".utf8))
        let options = ["--db", "s.sqlite", "--passphrase-file", "missing-passphrase"]

        let put = try CLI.coffer(["store", "put"] + options + ["--table", "presents", "bad.json"], in: directory.url)
        #expect(put.status != 0)
        #expect(put.stderr.contains("is not followed by , or }"), "\(put.stderr)")
        #expect(!put.stderr.contains("missing-passphrase"), "the store was opened first: \(put.stderr)")

        let update = try CLI.coffer(
            ["store", "update"] + options + ["--table", "presents", "--id", "1", "bad.json"], in: directory.url)
        #expect(update.status != 0)
        #expect(!update.stderr.contains("missing-passphrase"), "the store was opened first: \(update.stderr)")

        // A bad line after a good one needs the store: the good one's batch is written first.
        let later = try CLI.coffer(
            [
                "store", "put", "--db", "s.sqlite", "--kek-file", "kek", "--table", "presents", "--batch", "1",
                "good-then-bad.json",
            ],
            in: directory.url)
        #expect(later.status != 0)
        #expect(later.stderr.contains("line 2"), "\(later.stderr)")
        let listed = try CLI.coffer(
            ["store", "get", "--db", "s.sqlite", "--kek-file", "kek", "--table", "presents", "--id", "1"],
            in: directory.url)
        #expect(listed.stdoutText.contains("kite"), "\(listed.stderr)")
    }
}

/// On a terminal, a passphrase's stretching is announced before the wait;
/// to a pipe, nothing is added. (`script` gives the command a terminal.)
@Suite struct PassphraseWaitCLITests {
    @Test func aTerminalIsToldOfTheWaitAndAPipeIsNot() throws {
        let directory = try TemporaryDirectory()
        _ = try directory.write("pw", Array("correct horse\n".utf8))
        _ = try directory.write("plain.txt", Array("hello\n".utf8))
        let command = [CLI.binary.path, "encrypt", "--passphrase-file", "pw", "-o", "out.age", "plain.txt"]
        let onTerminal = try CLI.run(
            "/usr/bin/script", ["-qec", command.map { "'\($0)'" }.joined(separator: " "), "/dev/null"],
            in: directory.url)
        #expect(onTerminal.status == 0, "\(onTerminal.stderr)")
        #expect(onTerminal.stdoutText.contains("stretching the passphrase"), "\(onTerminal.stdoutText)")
        let piped = try CLI.coffer(
            ["encrypt", "--passphrase-file", "pw", "-o", "again.age", "plain.txt"], in: directory.url)
        #expect(piped.status == 0)
        #expect(!piped.stderr.contains("stretching"))
    }
}

/// The options that name a coffer-server for a store (the anchor's
/// `--anchor-*`, the tenant keys' `--tenant-keys-*`, and the environment
/// variable beside each) are refused when half given, before anything is
/// opened or asked of a server.
@Suite struct StoreServerOptionCLITests {
    @Test(
        arguments: [
            (["--anchor-token-file", "t"], [:], "--anchor-token-file is for --anchor-server"),
            (["--anchor-ca-file", "ca.pem"], [:], "--anchor-ca-file is for --anchor-server"),
            ([], ["COFFER_ANCHOR_TOKEN_FILE": "t"], "--anchor-token-file is for --anchor-server"),
            (
                ["--anchor-server", "https://keys.example"], [:],
                "needs --anchor-token-file (an operator token of scope stores:anchor)"
            ),
            (
                ["--anchor-server", "ftp://keys.example", "--anchor-token-file", "t"], [:],
                "--anchor-server takes the key server's URL"
            ),
            (["--tenant-keys-purpose", "p"], [:], "--tenant-keys-purpose is for --tenant-keys-server"),
            (["--tenant-keys-ca-file", "ca.pem"], [:], "--tenant-keys-ca-file is for --tenant-keys-server"),
            (
                [], ["COFFER_TENANT_KEYS_SERVER": "https://keys.example"],
                "needs --tenant-keys-token-file (an operator token of scope keys:release)"
            ),
            (
                ["--tenant-keys-server", "keys.example", "--tenant-keys-token-file", "t"], [:],
                "--tenant-keys-server takes the key server's URL"
            ),
        ] as [([String], [String: String], String)])
    func halfGivenServersAreRefused(options: [String], environment: [String: String], message: String) throws {
        let directory = try StoreCLITests.setUp()
        _ = try directory.write("t", Array("not-a-token\n".utf8))
        let result = try CLI.coffer(
            ["store", "get", "--db", "s.sqlite", "--kek-file", "kek", "--table", "presents", "--id", "1"] + options,
            in: directory.url, environment: environment)
        #expect(result.status == 64, "\(result.status) \(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }
}
