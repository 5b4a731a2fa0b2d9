import Crypto
import Foundation
import Testing

/// Both directions against two independent implementations: the `age` CLI
/// (Go) and pyrage (rage, Rust); X25519 and passphrase; binary and armored;
/// at sizes around the 64 KiB chunk boundary and beyond.
@Suite struct InteropTests {
    enum Peer: String, CaseIterable { case age, pyrage }
    enum Kind: String, CaseIterable { case x25519, passphrase }

    struct Case: CustomTestStringConvertible, Sendable {
        var peer: Peer, kind: Kind, armored: Bool
        /// The ChaCha20-Poly1305 provider coffer is told to use.
        var provider: String
        var testDescription: String { "\(peer) \(kind) \(armored ? "armored" : "binary") \(provider)" }
        var environment: [String: String] { ["COFFER_CHACHA_PROVIDER": provider] }
    }

    static let sizes = [0, 1, 65535, 65536, 65537, 5 << 20]
    static let cases = Peer.allCases.flatMap { peer in
        Kind.allCases.flatMap { kind in
            // The payload path is the same whatever the recipient, so the
            // fallback provider runs with X25519 only (scrypt is slow).
            [false, true].flatMap { armored in
                (kind == .x25519 ? ["libcrypto", "swift-crypto"] : ["libcrypto"]).map {
                    Case(peer: peer, kind: kind, armored: armored, provider: $0)
                }
            }
        }
    }

    static func peersAvailable(_ peer: Peer) -> Bool {
        switch peer {
        case .age:
            Peers.available([
                ("age", Peers.age), ("age-keygen", Peers.ageKeygen), ("python3 with pyrage", Peers.python),
            ])
        case .pyrage: Peers.available([("python3 with pyrage", Peers.python)])
        }
    }

    /// Makes an identity with coffer; returns (identity file, recipient).
    static func identity(in directory: TemporaryDirectory) throws -> (String, String) {
        let key = directory.path("key.txt")
        try #require(CLI.coffer(["keygen", "-o", key]).status == 0)
        let recipient = try CLI.coffer(["keygen", "-y", key]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        return (key, recipient)
    }

    static func expectSuccess(_ result: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 0, "\(what) failed: \(result.stderr)", sourceLocation: sourceLocation)
    }

    /// age creates its -o file at the first byte it writes, so an empty
    /// plaintext leaves no file: read that as empty.
    static func output(_ directory: TemporaryDirectory, _ name: String) throws -> [UInt8] {
        directory.exists(name) ? try directory.read(name) : []
    }

    /// The peer encrypts; coffer decrypts.
    @Test(arguments: cases)
    func peerToCoffer(_ test: Case) throws {
        guard Self.peersAvailable(test.peer) else { return }
        let directory = try TemporaryDirectory()
        let (key, recipient) = try Self.identity(in: directory)
        let passphraseFile = try directory.write("pw", Array("interop passphrase ✓\n".utf8))
        for size in Self.sizes {
            let input = try directory.write("in-\(size)", pattern(size, seed: UInt32(size + 1)))
            let encrypted = directory.path("in-\(size).age")
            let result: CLI.Result
            switch (test.peer, test.kind) {
            case (.age, .x25519):
                result = try CLI.run(
                    Peers.age!, ["-r", recipient] + (test.armored ? ["-a"] : []) + ["-o", encrypted, input])
            case (.age, .passphrase):
                result = try CLI.run(
                    Peers.python!,
                    [Peers.script, "age-passphrase", "encrypt", "--passphrase-file", passphraseFile]
                        + (test.armored ? ["--armor"] : []) + [input, encrypted])
            case (.pyrage, _):
                result = try CLI.run(
                    Peers.python!,
                    [Peers.script, "pyrage-encrypt"]
                        + (test.kind == .x25519 ? ["--recipient", recipient] : ["--passphrase-file", passphraseFile])
                        + (test.armored ? ["--armor"] : []) + [input, encrypted])
            }
            Self.expectSuccess(result, "\(test.peer) encrypting \(size) bytes")
            let decrypted = directory.path("out-\(size)")
            let opened = try CLI.coffer(
                ["decrypt"] + (test.kind == .x25519 ? ["-i", key] : ["--passphrase-file", passphraseFile])
                    + ["-o", decrypted, encrypted], environment: test.environment)
            Self.expectSuccess(opened, "coffer decrypting \(size) bytes from \(test.peer)")
            #expect(try directory.read("out-\(size)") == pattern(size, seed: UInt32(size + 1)), "size \(size)")
        }
    }

    /// coffer encrypts; the peer decrypts.
    @Test(arguments: cases)
    func cofferToPeer(_ test: Case) throws {
        guard Self.peersAvailable(test.peer) else { return }
        let directory = try TemporaryDirectory()
        let (key, recipient) = try Self.identity(in: directory)
        let passphraseFile = try directory.write("pw", Array("interop passphrase ✓\n".utf8))
        for size in Self.sizes {
            let input = try directory.write("in-\(size)", pattern(size, seed: UInt32(size + 3)))
            let encrypted = directory.path("in-\(size).age")
            let sealed = try CLI.coffer(
                ["encrypt"] + (test.kind == .x25519 ? ["-r", recipient] : ["--passphrase-file", passphraseFile])
                    + (test.armored ? ["-a"] : []) + ["-o", encrypted, input], environment: test.environment)
            Self.expectSuccess(sealed, "coffer encrypting \(size) bytes")
            let decrypted = directory.path("out-\(size)")
            let result: CLI.Result
            switch (test.peer, test.kind) {
            case (.age, .x25519):
                result = try CLI.run(Peers.age!, ["-d", "-i", key, "-o", decrypted, encrypted])
            case (.age, .passphrase):
                result = try CLI.run(
                    Peers.python!,
                    [
                        Peers.script, "age-passphrase", "decrypt", "--passphrase-file", passphraseFile, encrypted,
                        decrypted,
                    ])
            case (.pyrage, _):
                result = try CLI.run(
                    Peers.python!,
                    [Peers.script, "pyrage-decrypt"]
                        + (test.kind == .x25519 ? ["--identity-file", key] : ["--passphrase-file", passphraseFile]) + [
                            encrypted, decrypted,
                        ])
            }
            Self.expectSuccess(result, "\(test.peer) decrypting \(size) bytes from coffer")
            #expect(try Self.output(directory, "out-\(size)") == pattern(size, seed: UInt32(size + 3)), "size \(size)")
        }
    }

    /// rage encrypts to a p256tag (`age1tag1…`) recipient; coffer decrypts
    /// with the P-256 private key in PEM. (pyrage can only encrypt to tagged
    /// recipients, and the age CLI of Debian predates them.)
    @Test(arguments: [false, true])
    func pyrageToCofferP256Tag(armored: Bool) throws {
        guard Self.peersAvailable(.pyrage) else { return }
        let directory = try TemporaryDirectory()
        let key = try directory.write("p256.pem", Array(P256.KeyAgreement.PrivateKey().pemRepresentation.utf8))
        let recipient = try CLI.coffer(["keygen", "-y", key]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(recipient.hasPrefix("age1tag1"))
        for size in [0, 65537] {
            let input = try directory.write("in", pattern(size))
            Self.expectSuccess(
                try CLI.run(
                    Peers.python!,
                    [Peers.script, "pyrage-encrypt", "--recipient", recipient]
                        + (armored ? ["--armor"] : []) + [input, directory.path("in.age")]),
                "pyrage encrypting to p256tag")
            Self.expectSuccess(
                try CLI.coffer(["decrypt", "-i", key, "-o", directory.path("out"), directory.path("in.age")]),
                "coffer decrypting p256tag")
            #expect(try directory.read("out") == pattern(size))
        }
    }

    /// rage encrypts to an mlkem768p256tag (`age1tagpq1…`) recipient built
    /// from the recipient string coffer prints; coffer decrypts with its
    /// software identity.
    @Test func pyrageToCofferMLKEM768P256Tag() throws {
        guard Self.peersAvailable(.pyrage) else { return }
        let directory = try TemporaryDirectory()
        let key = directory.path("tagpq.txt")
        Self.expectSuccess(
            try CLI.coffer(["keygen", "--type", "mlkem768p256", "-o", key]), "coffer keygen mlkem768p256")
        let recipient = try CLI.coffer(["keygen", "-y", key]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(recipient.hasPrefix("age1tagpq1"))
        for size in [0, 65537] {
            let input = try directory.write("in", pattern(size))
            Self.expectSuccess(
                try CLI.run(
                    Peers.python!,
                    [
                        Peers.script, "pyrage-encrypt", "--recipient", recipient,
                        input, directory.path("in.age"),
                    ]), "pyrage encrypting to mlkem768p256tag")
            Self.expectSuccess(
                try CLI.coffer(["decrypt", "-i", key, "-o", directory.path("out"), directory.path("in.age")]),
                "coffer decrypting mlkem768p256tag")
            #expect(try directory.read("out") == pattern(size))
        }
    }

    /// A file age wrote, rekeyed by coffer to a key age made, opens with
    /// age; and the payload bytes are the ones age wrote.
    @Test(arguments: [false, true])
    func rekeyedFilesOpenWithAge(armored: Bool) throws {
        guard Self.peersAvailable(.age) else { return }
        let directory = try TemporaryDirectory()
        let (cofferKey, cofferRecipient) = try Self.identity(in: directory)
        let ageKey = directory.path("age-key.txt")
        Self.expectSuccess(try CLI.run(Peers.ageKeygen!, ["-o", ageKey]), "age-keygen")
        let ageRecipient = try CLI.run(Peers.ageKeygen!, ["-y", ageKey]).stdoutText.trimmingCharacters(
            in: .whitespacesAndNewlines)
        for size in [0, 65537, 5 << 20] {
            let input = try directory.write("in", pattern(size))
            Self.expectSuccess(
                try CLI.run(Peers.age!, ["-r", cofferRecipient, "-o", directory.path("a.age"), input]), "age encrypt")
            Self.expectSuccess(
                try CLI.coffer(
                    ["rekey", "-i", cofferKey, "-r", ageRecipient] + (armored ? ["-a"] : [])
                        + ["-o", directory.path("b.age"), directory.path("a.age")]), "coffer rekey")
            Self.expectSuccess(
                try CLI.run(Peers.age!, ["-d", "-i", ageKey, "-o", directory.path("out"), directory.path("b.age")]),
                "age decrypt")
            #expect(try Self.output(directory, "out") == pattern(size))
            if !armored {
                let payload = 16 + size + 16 * max(1, (size + 65535) / 65536)
                #expect(try directory.read("a.age").suffix(payload) == directory.read("b.age").suffix(payload))
            }
            // The old recipient no longer opens the rekeyed file.
            #expect(try CLI.coffer(["decrypt", "-i", cofferKey, directory.path("b.age")]).status == 2)
        }
    }
}
