import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The file keychain from the command line, with several processes and
/// `kill -9`: nothing acknowledged is ever lost, the file always opens,
/// and no temporary file outlives the next write.
@Suite(.serialized) struct KeychainCLITests {
    struct Setup: @unchecked Sendable {  // its directory is only read after init
        let directory: TemporaryDirectory
        var environment: [String: String] { ["COFFER_KEYCHAIN_DIR": directory.path("chains")] }
        var unlock: [String] { ["--key-file", directory.path("key")] }

        init() throws {
            directory = try TemporaryDirectory()
            chmod(directory.url.path, 0o700)
            try directory.write("key", (0..<32).map { UInt8($0 * 3 & 0xff) })
            let created = try CLI.coffer(["keychain", "create"] + unlock, environment: environment)
            #expect(created.status == 0, "\(created.stderr)")
        }

        func coffer(_ arguments: [String], stdin: [UInt8] = []) throws -> CLI.Result {
            try CLI.coffer(arguments + unlock, stdin: stdin, environment: environment)
        }

        func start(_ arguments: [String]) throws -> Process {
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments = arguments + unlock
            var environment = ProcessInfo.processInfo.environment
            environment["COFFER_KEYCHAIN_DIR"] = directory.path("chains")
            process.environment = environment
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }

        func accounts() throws -> Set<String> {
            let list = try coffer(["keychain", "list", "--json"])
            #expect(list.status == 0, "the keychain does not open: \(list.stderr)")
            let items = try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [[String: Any]] ?? []
            return Set(items.compactMap { $0["account"] as? String })
        }
    }

    /// Four processes add 200 items each to one keychain, at once.
    /// Every fourth item is updated right after it is added, while the
    /// other processes write: no update is lost either.
    @Test func fourProcessesAddConcurrently() throws {
        let setup = try Setup()
        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for index in 0..<200 {
                let account = "\(worker)-\(index)"
                let result = try? setup.coffer(
                    ["keychain", "add-password", "--service", "load", "--account", account], stdin: [UInt8(index)])
                if result?.status != 0 { failures.add() }
                if index % 4 == 0 {
                    let updated = try? setup.coffer(
                        ["keychain", "update-password", "--service", "load", "--account", account],
                        stdin: [UInt8(index), 0xFF])
                    if updated?.status != 0 { failures.add() }
                }
            }
        }
        #expect(failures.value == 0)
        let accounts = try setup.accounts()
        var updatesKept = 0
        for worker in 0..<4 {
            for index in stride(from: 0, to: 200, by: 20) {
                let value = try setup.coffer([
                    "keychain", "get-password", "--service", "load", "--account", "\(worker)-\(index)",
                ]).stdout
                if value == [UInt8(index), 0xFF] { updatesKept += 1 }
            }
        }
        print(
            "keychain concurrent writers: 4 processes × (200 adds + 50 updates), \(accounts.count) items present, \(updatesKept)/40 sampled updates kept, \(failures.value) failed"
        )
        #expect(accounts.count == 800)
        #expect(updatesKept == 40)
    }

    /// ≥ 300 rounds of `kill -9` at random moments during writes.
    @Test func killNineDuringWrites() throws {
        let setup = try Setup()
        var acknowledged = Set<String>()
        var killed = 0
        for round in 0..<300 {
            let account = "item-\(round)"
            let process = try setup.start([
                "keychain", "add-password", "--service", "kill", "--account", account, "--secret-file",
                setup.directory.path("key"),
            ])
            usleep(useconds_t.random(in: 0...120_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if process.terminationReason == .exit && process.terminationStatus == 0 {
                acknowledged.insert(account)
            } else {
                killed += 1
            }
            if round % 25 == 24 {
                let present = try setup.accounts()
                #expect(
                    acknowledged.isSubset(of: present), "acknowledged items lost: \(acknowledged.subtracting(present))")
            }
        }
        let present = try setup.accounts()
        #expect(acknowledged.isSubset(of: present))
        // The next write sweeps whatever a killed writer left, once it is
        // older than the two seconds that tell a dead writer from one
        // between `open` and `flock` (AtomicFile.sweepStaleTemporaries).
        sleep(3)
        #expect(
            try setup.coffer(["keychain", "add-password", "--service", "after", "--account", "x"], stdin: [1]).status
                == 0)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: setup.directory.path("chains")).filter {
            $0.contains(".coffer-")
        }
        print(
            "keychain kill -9: 300 rounds, \(killed) killed, \(acknowledged.count) acknowledged, all present: \(acknowledged.isSubset(of: present)), temp files after next write: \(leftovers.count)"
        )
        #expect(leftovers.isEmpty)
    }

    /// The seed's flows: get-or-create an RSA-2048 key by tag and encrypt to
    /// it; passwords in and out through stdin/stdout; delete.
    @Test func seedFlows() throws {
        let setup = try Setup()
        let first = try setup.coffer([
            "keychain", "generate-key", "--tag", "com.example.rsa", "--type", "rsa2048", "--if-missing",
        ])
        let second = try setup.coffer([
            "keychain", "generate-key", "--tag", "com.example.rsa", "--type", "rsa2048", "--if-missing",
        ])
        #expect(
            first.status == 0 && first.stdout == second.stdout
                && first.stdoutText.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        #expect(
            try setup.coffer(["keychain", "generate-key", "--tag", "com.example.rsa", "--type", "rsa2048"]).status == 6)
        let publicKey = try setup.directory.write("rsa.pub", first.stdout)
        let message = try setup.directory.write("m", Array("hello from the seed".utf8))
        #expect(
            try CLI.coffer(["rsa", "encrypt", "-k", publicKey, "-o", setup.directory.path("c"), message]).status == 0)
        let decrypted = try setup.coffer([
            "keychain", "rsa-decrypt", "--tag", "com.example.rsa", setup.directory.path("c"),
        ])
        #expect(decrypted.status == 0 && decrypted.stdoutText == "hello from the seed", "\(decrypted.stderr)")
        // Python's cryptography encrypts to the same public key; the keychain key decrypts it.
        let python = try Peers.cryptoPeer(["rsa-oaep-encrypt", publicKey, "sha256"], stdin: Array("from python".utf8))
        if let python {
            #expect(
                try setup.coffer(["keychain", "rsa-decrypt", "--tag", "com.example.rsa"], stdin: python).stdoutText
                    == "from python")
        }
        #expect(
            try setup.coffer(
                ["keychain", "add-password", "--service", "api", "--account", "me"], stdin: Array("tok".utf8)
            ).status == 0)
        #expect(
            try setup.coffer(
                ["keychain", "add-password", "--service", "api", "--account", "me"], stdin: Array("tok".utf8)
            ).status == 6)
        #expect(
            try setup.coffer(["keychain", "get-password", "--service", "api", "--account", "me"]).stdoutText == "tok")
        #expect(
            try setup.coffer(
                ["keychain", "update-password", "--service", "api", "--account", "me"], stdin: Array("new".utf8)
            ).status == 0)
        #expect(
            try setup.coffer(["keychain", "get-password", "--service", "api", "--account", "me"]).stdoutText == "new")
        let list = try setup.coffer(["keychain", "list"])
        #expect(list.stdoutText.contains("service=api") && !list.stdoutText.contains("new"))
        #expect(try setup.coffer(["keychain", "delete", "--tag", "com.example.rsa"]).status == 0)
        #expect(
            try setup.coffer(["keychain", "public-key", "--tag", "com.example.rsa", "--type", "rsa2048"]).status == 2)
        let wrong = try CLI.coffer(["keychain", "list", "--key-file", message], environment: setup.environment)
        #expect(wrong.status == 64)
    }
}

extension KeychainCLITests {
    /// The seed's second flow: two P-256 keys generated into the keychain,
    /// an AES key derived on each side by ECDH + X9.63-SHA-256 with a shared
    /// info, a string encrypted by one and decrypted by the other, both keys
    /// deleted. Both sides derive the same key, and Python's cryptography
    /// opens the box with it (CryptoKit's combined AES-GCM layout).
    @Test func seedKeyAgreementFlow() throws {
        let setup = try Setup()
        for name in ["alice", "bob"] {
            let generated = try setup.coffer([
                "keychain", "generate-key", "--tag", "com.example.\(name)", "--type", "p256",
            ])
            #expect(generated.status == 0, "\(generated.stderr)")
            _ = try setup.directory.write("\(name).pub", generated.stdout)
        }
        let info = try setup.directory.write("info", Array("coffer seed v1".utf8))
        func side(_ me: String, _ peer: String) -> [String] {
            ["--tag", "com.example.\(me)", "--peer", setup.directory.path("\(peer).pub"), "--shared-info-file", info]
        }
        let aliceKey = try setup.coffer(["keychain", "agree"] + side("alice", "bob"))
        let bobKey = try setup.coffer(["keychain", "agree"] + side("bob", "alice"))
        #expect(
            aliceKey.status == 0 && aliceKey.stdoutText.count == 65 && aliceKey.stdout == bobKey.stdout,
            "\(aliceKey.stderr)")

        let sealed = try setup.coffer(
            ["keychain", "encrypt-to", "--base64"] + side("alice", "bob"), stdin: Array("meet at noon".utf8))
        #expect(sealed.status == 0, "\(sealed.stderr)")
        let opened = try setup.coffer(
            ["keychain", "decrypt-from", "--base64"] + side("bob", "alice"), stdin: sealed.stdout)
        #expect(opened.status == 0 && opened.stdoutText == "meet at noon", "\(opened.stderr)")
        // Python derives the same AES key from Bob's side and opens the box.
        if let pythonOpened = try Peers.cryptoPeer(
            ["aesgcm-open-b64", aliceKey.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)],
            stdin: sealed.stdout)
        {
            #expect(pythonOpened == Array("meet at noon".utf8))
        }

        let otherInfo = try setup.directory.write("other", Array("coffer seed v2".utf8))
        let wrongInfo = try setup.coffer(
            [
                "keychain", "decrypt-from", "--base64", "--tag", "com.example.bob", "--peer",
                setup.directory.path("alice.pub"), "--shared-info-file", otherInfo,
            ], stdin: sealed.stdout)
        #expect(wrongInfo.status == 3 && wrongInfo.stdout.isEmpty)
        let truncated = try setup.coffer(["keychain", "decrypt-from"] + side("bob", "alice"), stdin: [1, 2, 3])
        #expect(truncated.status == 4)

        #expect(try setup.coffer(["keychain", "delete", "--tag", "com.example.alice"]).status == 0)
        #expect(try setup.coffer(["keychain", "delete", "--tag", "com.example.bob"]).status == 0)
        #expect(try setup.coffer(["keychain", "encrypt-to"] + side("alice", "bob"), stdin: [1]).status == 2)
        #expect(try setup.coffer(["keychain", "list"]).stdoutText.isEmpty)
    }

    /// A full disk, simulated by a file-size limit (`ulimit -f`, with
    /// SIGXFSZ ignored so that the write fails with EFBIG): a clear error,
    /// the previous contents intact, and no temporary file after the next write.
    @Test func fullDiskLeavesThePreviousContents() throws {
        let setup = try Setup()
        #expect(
            try setup.coffer(
                ["keychain", "add-password", "--service", "s", "--account", "kept"], stdin: Array("old".utf8)
            ).status == 0)
        let big = try setup.directory.write("big", [UInt8](repeating: 0x61, count: 2 << 20))
        let script = "trap '' XFSZ; ulimit -f 256; exec \"$0\" \"$@\""
        let result = try CLI.run(
            "/bin/sh",
            [
                "-c", script, CLI.binary.path, "keychain", "add-password", "--service", "s", "--account", "huge",
                "--secret-file", big,
            ] + setup.unlock, environment: setup.environment)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("was not changed"))
        #expect(try setup.accounts() == ["kept"])
        #expect(
            try setup.coffer(["keychain", "get-password", "--service", "s", "--account", "kept"]).stdoutText == "old")
        #expect(
            try setup.coffer(["keychain", "add-password", "--service", "s", "--account", "next"], stdin: [1]).status
                == 0)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: setup.directory.path("chains")).filter {
            $0.contains(".coffer-")
        }
        #expect(leftovers.isEmpty)
        // export-public is the other name of public-key.
        #expect(try setup.coffer(["keychain", "generate-key", "--tag", "t", "--type", "p256"]).status == 0)
        #expect(
            try setup.coffer(["keychain", "export-public", "--tag", "t", "--type", "p256", "--format", "openssh"])
                .stdoutText.hasPrefix("ecdsa-sha2-nistp256 "))
    }

    /// An age identity kept in the keychain decrypts a file.
    @Test func ageIdentityFromKeychain() throws {
        let setup = try Setup()
        let key = setup.directory.path("id.txt")
        #expect(try CLI.coffer(["keygen", "-o", key]).status == 0)
        let recipient = try CLI.coffer(["keygen", "-y", key]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let input = try setup.directory.write("in", pattern(70000))
        #expect(try CLI.coffer(["encrypt", "-r", recipient, "-o", setup.directory.path("f.age"), input]).status == 0)
        #expect(try setup.coffer(["keychain", "add-identity", "--label", "work", "--secret-file", key]).status == 0)
        #expect(
            try setup.coffer(["keychain", "add-identity", "--label", "junk"], stdin: Array("not an identity\n".utf8))
                .status == 4)
        let unlock = ["--keychain-key-file", setup.directory.path("key")]
        let decrypted = try CLI.coffer(
            ["decrypt", "--keychain", "default", "--identity", "work"] + unlock + [
                "-o", setup.directory.path("out"), setup.directory.path("f.age"),
            ],
            environment: setup.environment)
        #expect(decrypted.status == 0, "\(decrypted.stderr)")
        #expect(try setup.directory.read("out") == pattern(70000))
        let missing = try CLI.coffer(
            ["decrypt", "--keychain", "default", "--identity", "other"] + unlock + [setup.directory.path("f.age")],
            environment: setup.environment)
        #expect(missing.status == 2 && missing.stderr.contains("no age identity labelled other"))
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() {
        lock.lock()
        count += 1
        lock.unlock()
    }
    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}

#if SecretService
extension KeychainCLITests {
    /// The same commands on the desktop's keyring (`--backend secret-service`),
    /// inside scripts/with-secret-service's private gnome-keyring-daemon.
    @Test func secretServiceBackend() throws {
        let directory = try TemporaryDirectory()
        let name = "coffer-cli-\(UUID().uuidString)"
        func coffer(_ arguments: [String], stdin: [UInt8] = []) throws -> CLI.Result {
            try CLI.coffer(
                ["keychain"] + arguments + ["--backend", "secret-service", "--keychain", name], stdin: stdin)
        }
        let added = try coffer(
            ["add-password", "--service", "api", "--account", "me", "--label", "API token"], stdin: Array("tok\n".utf8))
        guard added.status == 0 || !(Peers.skipAllowed) else { return }
        #expect(added.status == 0, "\(added.stderr)")
        #expect(try coffer(["add-password", "--service", "api", "--account", "me"], stdin: [1]).status == 6)
        #expect(try coffer(["get-password", "--service", "api", "--account", "me"]).stdout == Array("tok\n".utf8))
        let list = try coffer(["list", "--json"])
        #expect(
            list.status == 0 && list.stdoutText.contains("\"label\" : \"API token\"")
                && !list.stdoutText.contains("tok\\n"))

        for side in ["alice", "bob"] {
            let generated = try coffer(["generate-key", "--tag", side, "--type", "x25519"])
            #expect(generated.status == 0, "\(generated.stderr)")
            _ = try directory.write("\(side).pub", generated.stdout)
        }
        let sealed = try coffer(
            ["encrypt-to", "--tag", "alice", "--type", "x25519", "--peer", directory.path("bob.pub")],
            stdin: Array("hi".utf8))
        let opened = try coffer(
            ["decrypt-from", "--tag", "bob", "--type", "x25519", "--peer", directory.path("alice.pub")],
            stdin: sealed.stdout)
        #expect(opened.status == 0 && opened.stdoutText == "hi", "\(opened.stderr)")

        // An age identity kept in the keyring decrypts a file.
        let key = directory.path("id.txt")
        #expect(try CLI.coffer(["keygen", "-o", key]).status == 0)
        let recipient = try CLI.coffer(["keygen", "-y", key]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let input = try directory.write("in", Array("for the keyring".utf8))
        #expect(try CLI.coffer(["encrypt", "-r", recipient, "-o", directory.path("f.age"), input]).status == 0)
        #expect(try coffer(["add-identity", "--label", "work", "--secret-file", key]).status == 0)
        let decrypted = try CLI.coffer([
            "decrypt", "--keychain", name, "--keychain-backend", "secret-service", "--identity", "work",
            directory.path("f.age"),
        ])
        #expect(decrypted.status == 0 && decrypted.stdoutText == "for the keyring", "\(decrypted.stderr)")

        // A store whose KEK the keyring keeps (made by init, found by put and get).
        let schema = try directory.write(
            "schema.json",
            Array(
                #"{"tables": [{"name": "notes", "primaryKey": "id", "fields": [{"name": "id", "type": "integer"}, {"name": "body", "type": "text", "sealed": true}]}]}"#
                    .utf8))
        let store = [
            "--db", directory.path("notes.sqlite"), "--kek-keychain", name, "--kek-tag", "stores/notes",
            "--kek-keychain-backend", "secret-service",
        ]
        let made = try CLI.coffer(["store", "init"] + store + ["--schema", schema])
        #expect(made.status == 0, "\(made.stderr)")
        let put = try CLI.coffer(
            ["store", "put"] + store + ["--table", "notes"], stdin: Array(#"{"body": "kept"}"#.utf8))
        #expect(put.status == 0 && put.stdoutText == "{\"id\":1}\n", "\(put.stderr)")
        let got = try CLI.coffer(["store", "get"] + store + ["--table", "notes", "--id", "1"])
        #expect(got.status == 0 && got.stdoutText.contains(#""body":"kept""#), "\(got.stdout) \(got.stderr)")
        #expect(try coffer(["delete", "--tag", "stores/notes"]).status == 0)
        let gone = try CLI.coffer(["store", "get"] + store + ["--table", "notes", "--id", "1"])
        #expect(gone.status != 0 && gone.stderr.contains("stores/notes"), "\(gone.stderr)")

        let passphrase = try directory.write("pass", Array("x".utf8))
        #expect(try coffer(["list", "--passphrase-file", passphrase]).status == 64)
        #expect(try coffer(["create"]).status == 64)
        #expect(try coffer(["delete", "--tag", "alice"]).status == 0)
        #expect(try coffer(["delete", "--tag", "bob"]).status == 0)
        #expect(try coffer(["delete", "--service", "api"]).status == 0)
        #expect(try coffer(["delete", "--service", "coffer.age-identity"]).status == 0)
        #expect(try coffer(["get-password", "--service", "api", "--account", "me"]).status == 2)
    }
}
#endif
