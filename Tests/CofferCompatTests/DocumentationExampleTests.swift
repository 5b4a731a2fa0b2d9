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
