import Coffer
import CofferCompat
import CofferKeychain
import Crypto
import Foundation
import Testing

/// The examples of the DocC landing pages (Sources/*/*.docc), run as
/// written, so that a page never shows code that does not compile or work.
@Suite struct DocumentationExampleTests {
    @Test func cofferLandingPage() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-doc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }

        let identity = X25519.Identity()
        let sealed = try Age.encrypt(Data("hello".utf8), to: [identity.recipient])
        let opened = try Age.decrypt(sealed, with: [identity])
        #expect(opened == Data("hello".utf8))

        let store = KeyRingStore(
            path: folder.appendingPathComponent("notes.keyring").path, secret: .password(Array("correct horse".utf8)),
            rollbackGuard: nil)
        _ = try store.create(kdf: .scrypt(logN: 10, r: 8, p: 1))
        let ring = try store.read().keyRing
        let context = try SealingContext("notes", "42", "body")
        let value = try ring.seal(Data("dear diary".utf8), context: context.bytes)
        let body = try ring.open(value, context: context.bytes)
        #expect(body == Data("dear diary".utf8))
    }

    @Test func cofferKeychainLandingPage() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-doc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }

        let keychain = try FileKeychain.create(
            path: folder.appendingPathComponent("app.keychain").path, secret: .password(Array("correct horse".utf8)),
            kdf: .scrypt(logN: 10, r: 8, p: 1), rollbackGuard: nil)
        try keychain.add(.password(service: "api", account: "me"), data: SecretBytes(Array("t0ken".utf8)))
        let token = try keychain.copyData(.password(service: "api", account: "me"))
        #expect(token == SecretBytes(Array("t0ken".utf8)))
        let publicKey = try keychain.generateKey(.p256, tag: "device", label: "this device")
        #expect(publicKey != nil)
    }

    @Test func cofferCompatLandingPage() throws {
        let password = Array("s3cret".utf8)
        let ciphertext = try RNCryptor.encrypt(Array("legacy".utf8), credentials: .password(password))
        let plaintext = try RNCryptor.decrypt(ciphertext, credentials: .password(Array("s3cret".utf8)))
        #expect(Array(plaintext) == Array("legacy".utf8))
    }
}

/// The examples in the doc comments of KeyRing, X25519, RNCryptor and
/// CryptoKitBox, run as written.
@Suite struct DocCommentExampleTests {
    @Test func keyRing() throws {
        var ring = KeyRing()
        let context = Data("cards/42/number".utf8)  // where the value lives: it opens nowhere else
        let sealed = try ring.seal(Data("4111 1111 1111 1111".utf8), context: context)
        let newKey = try ring.rotate()  // new values seal under newKey; sealed still opens
        let number = try ring.open(sealed, context: context)
        let moved = try ring.rewrap(sealed, context: context)  // now under newKey, never handed out in the clear
        #expect(number == Data("4111 1111 1111 1111".utf8))
        #expect(try SealedValue.keyID(of: moved) == newKey && SealedValue.keyID(of: sealed) != newKey)
        #expect(throws: CofferError.self) { try ring.open(sealed, context: Data("cards/43/number".utf8)) }
    }

    @Test func x25519() throws {
        let alice = X25519.Identity()
        let shared = alice.recipient.description  // age1…: give it to whoever encrypts to Alice
        let file = try Age.encrypt(Data("hello".utf8), to: [try X25519.Recipient(shared)])
        let hello = try Age.decrypt(file, with: [alice])
        let kept = alice.exportSecretKey()  // AGE-SECRET-KEY-1…: keep it secret
        let again = try X25519.Identity(kept)
        #expect(hello == Data("hello".utf8) && shared.hasPrefix("age1") && kept.hasPrefix("AGE-SECRET-KEY-1"))
        #expect(try Age.decrypt(file, with: [again]) == hello)
    }

    @Test func rncryptor() throws {
        let message = try RNCryptor.encrypt(Data("hi".utf8), credentials: .password(Array("secret".utf8)))
        let hi = try RNCryptor.decrypt(message, credentials: .password(Array("secret".utf8)))
        #expect(hi == Data("hi".utf8))
        #expect(throws: CofferError.self) {
            try RNCryptor.decrypt(message, credentials: .password(Array("Secret".utf8)))
        }
    }

    @Test func cryptoKitBox() throws {
        let key = Array(repeating: UInt8(7), count: 32)  // the app's 32-byte key
        let stored = try CryptoKitBox.seal(Data("a note".utf8), key: key, cipher: .aesgcm)
        let note = try CryptoKitBox.open(stored, key: key, cipher: .aesgcm)
        #expect(note == Data("a note".utf8))
    }
}
