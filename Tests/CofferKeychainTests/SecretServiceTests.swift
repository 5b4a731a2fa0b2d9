#if SecretService
import Coffer
import CofferKeychain
import CofferTesting
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// SecretServiceKeychain against a real gnome-keyring-daemon: scripts/test
/// runs the suite inside `dbus-run-session` with the daemon started and its
/// login collection unlocked (the password is in COFFER_TEST_KEYRING_PASSWORD).
/// Without a Secret Service these tests fail, unless COFFER_SKIP_INTEROP=1
/// outside CI.
@Suite(.serialized) struct SecretServiceTests {
    static let environment = ProcessInfo.processInfo.environment
    static var skipAllowed: Bool { environment["CI"] != "true" && environment["COFFER_SKIP_INTEROP"] == "1" }

    /// A keychain under a name no other test uses, or nil when skipping is allowed and there is no service.
    static func keychain(_ purpose: String) throws -> SecretServiceKeychain? {
        do {
            return try SecretServiceKeychain(name: "coffer-test-\(purpose)-\(UUID().uuidString)")
        } catch let error as KeychainError where skipAllowed {
            print("skipping Secret Service tests (COFFER_SKIP_INTEROP=1): \(error)")
            return nil
        }
    }

    @Test func conformance() throws {
        guard try Self.keychain("probe") != nil else { return }
        try KeychainConformance.run { try SecretServiceKeychain(name: "coffer-test-conformance-\(UUID().uuidString)") }
    }

    /// Another Secret Service client (libsecret's own `secret-tool`) sees
    /// the item Coffer stored, under the attributes docs/keychain.md names,
    /// and Coffer reads what secret-tool stored under them.
    @Test func secretToolSeesTheSameItems() throws {
        guard let keychain = try Self.keychain("interop") else { return }
        try keychain.add(
            .password(service: "mail", account: "alice", label: "Alice's mail"),
            data: SecretBytes(Array("s3cret\u{1}bytes".utf8)))
        let looked = try Self.secretTool([
            "lookup", "xdg:schema", "org.coffer.Keychain", "coffer-keychain", keychain.name,
            "class", "genericPassword", "service", "mail", "account", "alice",
        ])
        #expect(looked.status == 0)
        #expect(looked.output == Array("s3cret\u{1}bytes".utf8))

        let stored = try Self.secretTool(
            [
                "store", "--label=made by secret-tool", "xdg:schema", "org.coffer.Keychain", "coffer-keychain",
                keychain.name,
                "class", "genericPassword", "service", "mail", "account", "bob",
            ],
            input: Array("from secret-tool".utf8))
        #expect(stored.status == 0)
        #expect(
            try keychain.copyData(.password(service: "mail", account: "bob")).revealed()
                == Array("from secret-tool".utf8))
        let bob = try #require(try keychain.copyMatching(.password(service: "mail", account: "bob")).first)
        #expect(bob.label == nil && bob.created == Date(timeIntervalSinceReferenceDate: 0))

        try keychain.delete(.password(service: "mail"))
        #expect(try Self.secretTool(["lookup", "coffer-keychain", keychain.name, "account", "alice"]).status != 0)

        // An item of our schema without its primary key is reported, not guessed at.
        _ = try Self.secretTool(
            [
                "store", "--label=broken", "xdg:schema", "org.coffer.Keychain", "coffer-keychain", keychain.name,
                "class", "genericPassword", "service", "mail",
            ], input: [1])
        #expect(throws: KeychainError(.corrupted, "")) { try keychain.copyMatching(.password(service: "mail")) }
        #expect(try Self.secretTool(["clear", "coffer-keychain", keychain.name]).status == 0)
        #expect(throws: KeychainError(.itemNotFound, "")) { try keychain.copyMatching(.password()) }
    }

    /// A binary secret with every byte value, and an empty one, come back exactly.
    @Test func binarySecrets() throws {
        guard let keychain = try Self.keychain("binary") else { return }
        let every = SecretBytes((0...255).map { UInt8($0) } + (0...255).reversed().map { UInt8($0) })
        try keychain.add(.key(tag: "every-byte", type: .symmetric256), data: every)
        #expect(try keychain.copyData(.key(tag: "every-byte")) == every)
        try keychain.add(.password(service: "empty", account: "e"), data: SecretBytes([]))
        #expect(try keychain.copyData(.password(service: "empty")).count == 0)
        let rsa = try #require(try keychain.getOrCreateKey(.rsa2048, tag: "com.example.rsa"))
        #expect(
            try KeyFiles.encode(keychain.publicKey(tag: "com.example.rsa", type: .rsa2048), as: .spki, der: true)
                == KeyFiles.encode(rsa, as: .spki, der: true))
        try keychain.delete(.key())
        try keychain.delete(.password())
    }

    /// Two Coffer keychains in one collection do not see each other's items.
    @Test func namesAreNamespaces() throws {
        guard let first = try Self.keychain("ns-a"), let second = try Self.keychain("ns-b") else { return }
        try first.add(.password(service: "shared", account: "x"), data: SecretBytes([1]))
        try second.add(.password(service: "shared", account: "x"), data: SecretBytes([2]))
        #expect(try first.copyData(.password(service: "shared")) == SecretBytes([1]))
        #expect(try second.copyData(.password(service: "shared")) == SecretBytes([2]))
        try first.delete(.password())
        #expect(throws: KeychainError(.itemNotFound, "")) { try first.copyMatching(.password()) }
        #expect(try second.copyMatching(.password()).count == 1)
        try second.delete(.password())
    }

    /// A locked collection answers `interactionNotAllowed` (not "not found")
    /// and never prompts; its items are all there once it is unlocked.
    @Test func lockedCollection() throws {
        guard let keychain = try Self.keychain("locked") else { return }
        try keychain.add(.password(service: "kept", account: "k"), data: SecretBytes([42]))
        #expect(try keychain.isLocked() == false)
        try keychain.lockCollection()
        #expect(try keychain.isLocked() == true)
        #expect(throws: KeychainError(.interactionNotAllowed, "")) {
            try keychain.copyMatching(.password(service: "kept"))
        }
        #expect(throws: KeychainError(.interactionNotAllowed, "")) { try keychain.copyData(.password(service: "kept")) }
        #expect(throws: KeychainError(.interactionNotAllowed, "")) {
            try keychain.copyMatching(.password(service: "absent"))
        }
        #expect(throws: KeychainError(.interactionNotAllowed, "")) {
            try keychain.add(.password(service: "new", account: "n"), data: SecretBytes([1]))
        }
        #expect(throws: KeychainError(.interactionNotAllowed, "")) { try keychain.delete(.password(service: "kept")) }
        #expect(throws: KeychainError(.interactionNotAllowed, "")) {
            try keychain.update(.password(service: "kept"), label: .some("x"))
        }

        // gnome-keyring unlocks without a person only when it starts: restart
        // it with the password on stdin, as a login session does.
        try Self.restartUnlocked()
        SecretServiceKeychain.disconnectShared()
        let reopened = try SecretServiceKeychain(name: keychain.name)
        #expect(try reopened.isLocked() == false)
        #expect(try reopened.copyData(.password(service: "kept")) == SecretBytes([42]))
        try reopened.delete(.password())
    }

    /// Replaces the running gnome-keyring-daemon with one that unlocks the
    /// login keyring with COFFER_TEST_KEYRING_PASSWORD (read on its stdin).
    static func restartUnlocked() throws {
        _ = try #require(
            environment["COFFER_TEST_KEYRING_PASSWORD"], "scripts/with-secret-service sets COFFER_TEST_KEYRING_PASSWORD"
        )
        let script = """
            # Only the daemon of this session (a desktop's own keyring is left alone).
            for pid in $(pgrep -u "$(id -u)" -x gnome-keyring-d); do
              tr '\\0' '\\n' < /proc/$pid/environ 2>/dev/null | grep -qx "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" && kill $pid
            done
            sleep 0.2
            printf %s "$COFFER_TEST_KEYRING_PASSWORD" | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1 </dev/stdin
            for _ in $(seq 100); do
              dbus-send --session --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.NameHasOwner \
                string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true' && exit 0
              sleep 0.1
            done
            exit 1
            """
        // Not Foundation's Process: on Linux it reports a child as running
        // until every process holding its status socket exits, and the
        // daemon the script starts holds it for good.
        let status = system(script)
        try #require(status == 0, "a new gnome-keyring-daemon owns org.freedesktop.secrets")
    }

    static func secretTool(_ arguments: [String], input: [UInt8] = []) throws -> (status: Int32, output: [UInt8]) {
        try run("/usr/bin/env", ["secret-tool"] + arguments, input: input)
    }

    static func run(_ executable: String, _ arguments: [String], input: [UInt8]) throws -> (
        status: Int32, output: [UInt8]
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        try stdin.fileHandleForWriting.write(contentsOf: Data(input))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, Array(output))
    }
}
#endif
