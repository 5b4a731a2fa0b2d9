import Coffer
import Foundation
import Testing

/// The code of Coffer's DocC articles (Sources/Coffer/Coffer.docc), run
/// as written: scripts/check-article-code fails when an article's block is
/// not found here line for line.
@Suite struct DocumentationArticleTests {
    @Test func sealingAField() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coffer-article-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: folder) }

        // Make a key ring and keep it
        let store = KeyRingStore(
            path: folder.appendingPathComponent("notes.keyring").path,
            secret: .password(Array("correct horse battery staple".utf8)))
        _ = try store.create(kdf: .scrypt(logN: 15, r: 8, p: 1))
        let ring = try store.read().keyRing

        // Seal and open with a context
        let context = try SealingContext("notes", "42", "body")
        let sealed = try ring.seal(Data("dear diary".utf8), context: context)
        let body = try ring.open(sealed, context: context)

        // Moved to another row, the value does not open.
        let elsewhere = try SealingContext("notes", "43", "body")
        do {
            _ = try ring.open(sealed, context: elsewhere)
        } catch let error as CofferError where error.code == .payloadAuthenticationFailed {
            // A tampered or misplaced value: report it, never show its bytes.
        }
        #expect(body == Data("dear diary".utf8))
        #expect(throws: CofferError.self) { _ = try ring.open(sealed, context: elsewhere) }

        let text = SealedValue.text(sealed)
        let again = try ring.open(try SealedValue.binary(Array(text.utf8)), context: context)
        #expect(again == body)

        // Rotate the keys
        let oldKey = ring.primaryID
        _ = try store.modify { file in try file.update { try $0.rotate() } }
        let rotated = try store.read().keyRing
        let moved = try rotated.rewrap(sealed, context: context)
        try store.modify { file in try file.update { try $0.disable(oldKey) } }
        let stillOpens = try store.read().keyRing.open(moved, context: context)
        #expect(stillOpens == body)
        // The old key is disabled: what it sealed no longer opens.
        #expect(throws: CofferError.self) { _ = try store.read().keyRing.open(sealed, context: context) }
    }
}
