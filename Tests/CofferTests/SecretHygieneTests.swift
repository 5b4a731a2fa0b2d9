import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import Coffer

@Suite struct SecretHygieneTests {
    static let secret = "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX"

    @Test func descriptionsAreRedacted() throws {
        let identity = try X25519.Identity(Self.secret)
        for text in [
            String(describing: identity), String(reflecting: identity), String(describing: FileKey.random()),
            String(describing: Scrypt.Identity(passphrase: Array("hunter2".utf8))),
            String(describing: try Scrypt.Recipient(passphrase: Array("hunter2".utf8))),
        ] {
            #expect(text.contains("redacted"))
            #expect(!text.contains("GFPYYSJZ") && !text.contains("hunter2"))
        }
    }

    @Test func identityFileErrorsDoNotEchoSecrets() throws {
        let damaged = String(Self.secret.dropLast()) + "Y"
        let contents = "# a comment\n\n\(Self.secret)\n\(damaged)\n"
        do {
            _ = try AgeKeys.identities(fileContents: contents, name: "keys.txt")
            Issue.record("a damaged identity was accepted")
        } catch let error as CofferError {
            #expect(error.code == .malformed)
            #expect(error.description.contains("line 4 of keys.txt"))
            #expect(!error.description.contains("GFPYYSJZ"))
        }
    }

    @Test func identityFilesSkipCommentsAndBlankLines() throws {
        let identities = try AgeKeys.identities(fileContents: "# created\r\n\n  \(Self.secret)  \r\n")
        #expect(identities.count == 1)
        #expect(throws: CofferError(.malformed, "")) { try AgeKeys.identities(fileContents: "# nothing here\n") }
    }

    @Test func fileKeysCompareByValue() throws {
        let bytes = [UInt8](repeating: 7, count: 16)
        #expect(try FileKey(unwrapped: bytes) == FileKey(unwrapped: bytes))
        #expect(try FileKey(unwrapped: bytes) != FileKey.random())
        #expect(throws: CofferError(.malformedHeader, "")) { try FileKey(unwrapped: [UInt8](repeating: 7, count: 17)) }
    }
}

/// F7: every secret-holding type of Coffer shows `<redacted>` to
/// `description`, `debugDescription`, interpolation and `dump`, and its
/// mirror has no children that could carry the secret.
@Suite struct SecretDumpTests {
    /// Everything a developer might print a value with.
    static func renderings(_ value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return [String(describing: value), String(reflecting: value), "\(value)", dumped]
    }

    /// The ways secret bytes would show up in a default rendering.
    static func forms(_ secret: [UInt8]) -> [String] {
        [secret.map(String.init).joined(separator: ", "), secret.hex, String(decoding: secret, as: UTF8.self)].filter {
            $0.count >= 6
        }
    }

    static func expectRedacted(_ value: Any, secrets: [[UInt8]] = [], sourceLocation: SourceLocation = #_sourceLocation)
    {
        for text in renderings(value) {
            #expect(text.contains("redacted") || text.contains("KeyRing("), "\(text)", sourceLocation: sourceLocation)
            for secret in secrets {
                for form in forms(secret) {
                    #expect(!text.contains(form), "\(type(of: value)) shows its secret", sourceLocation: sourceLocation)
                }
            }
        }
        // No child could hold the secret: the mirror is empty (or lists only public values).
        let children = Mirror(reflecting: value).children.map { $0.label ?? "" }
        #expect(
            children.allSatisfy { ["keys", "keyRing", "generation"].contains($0) },
            "\(type(of: value)) mirrors \(children)", sourceLocation: sourceLocation)
    }

    @Test func F7_everySecretHoldingTypeIsRedacted() throws {
        let passphrase = Array("hunter2-passphrase".utf8)
        let x25519 = try X25519.Identity(SecretHygieneTests.secret)
        let x25519Bytes = x25519.privateKey.rawRepresentation
        Self.expectRedacted(x25519, secrets: [Array(x25519Bytes)])
        Self.expectRedacted(try MLKEM768X25519.Identity())
        Self.expectRedacted(P256Tag.Identity(privateKey: P256.KeyAgreement.PrivateKey()))
        Self.expectRedacted(try MLKEM768P256Tag.Identity())
        Self.expectRedacted(try SSHEd25519.Identity(privateKey: Curve25519.Signing.PrivateKey()))
        Self.expectRedacted(try SSHRSA.Identity(privateKey: _RSA.Signing.PrivateKey(keySize: .bits2048)))
        Self.expectRedacted(try Scrypt.Recipient(passphrase: passphrase), secrets: [passphrase])
        Self.expectRedacted(Scrypt.Identity(passphrase: passphrase), secrets: [passphrase])
        let fileKey = FileKey.random()
        Self.expectRedacted(fileKey, secrets: [fileKey.withUnsafeBytes { Array($0) }])
        let signing = Curve25519.Signing.PrivateKey()
        Self.expectRedacted(AsymmetricPrivateKey.ed25519(signing), secrets: [Array(signing.rawRepresentation)])
        Self.expectRedacted(try KeyAgreement.Party(privateKey: .x25519(Curve25519.KeyAgreement.PrivateKey())))
        Self.expectRedacted(try RSAEncryption.Decryptor(privateKey: .rsa(_RSA.Signing.PrivateKey(keySize: .bits2048))))
        let kek = SymmetricKey(size: .bits256)
        let kekBytes = kek.withUnsafeBytes { Array($0) }
        Self.expectRedacted(UnlockSecret.password(passphrase), secrets: [passphrase])
        Self.expectRedacted(UnlockSecret.key(kek), secrets: [kekBytes])
        Self.expectRedacted(UnlockSecret.keyProvider(named: "a vault") { kek }, secrets: [kekBytes])
        Self.expectRedacted(
            KeyRingStore(path: "/tmp/x.ckr", secret: .password(passphrase), rollbackGuard: nil), secrets: [passphrase])
        let ring = KeyRing()
        let ringKey = ring.entries[0].key.withUnsafeBytes { Array($0) }
        Self.expectRedacted(ring, secrets: [ringKey])
        Self.expectRedacted(try KeyRingFile(keyRing: ring, secret: .key(kek)), secrets: [ringKey, kekBytes])
        let folder = try ScratchFolder()
        let identity = X25519.Identity()
        try Age.encrypt(Array("x".utf8), to: [identity.recipient]).write(
            to: URL(fileURLWithPath: folder.path + "/x.age"))
        Self.expectRedacted(try AgeRandomAccessFile(path: folder.path + "/x.age", identities: [identity]))
    }
}
