import Crypto
import Foundation
import Testing

@testable import Coffer

@Suite struct SealingContextTests {
    /// Vectors computed with Python's struct.pack (">I" lengths), not with Coffer.
    @Test func encodingMatchesTheSpec() throws {
        #expect(
            Hex.encode(try SealingContext("presents", "42", "description").bytes)
                == "5343310000000870726573656e74730000000234320000000b6465736372697074696f6e")
        #expect(Hex.encode(try SealingContext(parts: [[], Array("é".utf8)]).bytes) == "5343310000000000000002c3a9")
        #expect(try SealingContext().bytes == Array("SC1".utf8))
    }

    /// The review's footgun: with a separator these two collide; with
    /// length prefixes they do not, and a value sealed for one does not
    /// open for the other.
    @Test func partsThatJoinAlikeStayApart() throws {
        let a = try SealingContext("notes", "4/description")
        let b = try SealingContext("notes/4", "description")
        let joinedA = ["notes", "4/description"].joined(separator: "/")
        let joinedB = ["notes/4", "description"].joined(separator: "/")
        #expect(joinedA == joinedB)
        #expect(a != b)
        let ring = KeyRing()
        let sealed = try ring.seal(Array("secret".utf8), context: a)
        #expect(try ring.open(sealed, context: a) == Data("secret".utf8))
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) { _ = try ring.open(sealed, context: b) }
        #expect(try ring.open(ring.rewrap(sealed, context: a), context: a) == Data("secret".utf8))
    }

    /// Different part lists give different bytes (injectivity), over many
    /// random lists of short parts drawn from a tiny alphabet, where
    /// accidental equality of joined forms is frequent.
    @Test func differentPartListsNeverCollide() throws {
        var seen: [[UInt8]: [[UInt8]]] = [:]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            let parts = (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                (0..<Int.random(in: 0...3, using: &generator)).map { _ in UInt8.random(in: 0...1, using: &generator) }
            }
            let bytes = try SealingContext(parts: parts).bytes
            if let earlier = seen[bytes] { #expect(earlier == parts) } else { seen[bytes] = parts }
        }
        #expect(seen.count > 100)
    }

    @Test func oversizedPartsAreRefused() throws {
        #expect(throws: CofferError(.invalidArgument, "")) {
            _ = try SealingContext(parts: [[UInt8](repeating: 0, count: (1 << 20) + 1)])
        }
        #expect(try SealingContext("user-7", "ssn").description == "SealingContext(2 parts, 20 bytes)")
    }
}

/// The ECDH box of the seed's flow, now a library format (issue 12).
@Suite struct AgreementBoxTests {
    @Test func boxesOpenOnTheOtherSideOnly() throws {
        let alice = AsymmetricPrivateKey.p256(P256.Signing.PrivateKey())
        let bob = AsymmetricPrivateKey.p256(P256.Signing.PrivateKey())
        let sending = try KeyAgreement.agree(privateKey: alice, peer: bob.publicKey, size: 32)
        let receiving = try KeyAgreement.agree(privateKey: bob, peer: alice.publicKey, size: 32)
        let box = try KeyAgreement.Box.seal(Array("hello bob".utf8), using: sending)
        #expect(box.count == 9 + KeyAgreement.Box.overhead)
        #expect(try KeyAgreement.Box.open(box, using: receiving) == Data("hello bob".utf8))
        // CryptoKit's own reading of the bytes agrees.
        #expect(try AES.GCM.open(AES.GCM.SealedBox(combined: box), using: receiving) == Data("hello bob".utf8))
        #expect(box != (try KeyAgreement.Box.seal(Array("hello bob".utf8), using: sending)))  // fresh nonce each time
        var altered = box
        altered[20] ^= 1
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            _ = try KeyAgreement.Box.open(altered, using: receiving)
        }
        #expect(throws: CofferError(.malformed, "")) { _ = try KeyAgreement.Box.open(box.prefix(27), using: receiving) }
        #expect(throws: CofferError(.invalidArgument, "")) {
            _ = try KeyAgreement.Box.seal([1], using: SymmetricKey(size: .bits128))
        }
    }
}

/// The identity-file writer, now in the library (issue 12).
@Suite struct IdentityFileWriterTests {
    @Test func writesPrivateFilesAndNeverReplaces() throws {
        let folder = try ScratchFolder()
        let path = folder.path + "/key.txt"
        let identity = X25519.Identity()
        try AgeKeys.writeIdentityFile(identity.exportSecretKey() + "\n", to: path)
        let info = try FileManager.default.attributesOfItem(atPath: path)
        #expect((info[.posixPermissions] as? Int) == 0o600)
        #expect(try AgeKeys.identities(fileContents: String(contentsOfFile: path, encoding: .utf8)).count == 1)
        #expect(throws: CofferError(.refused, "")) { try AgeKeys.writeIdentityFile("AGE-SECRET-KEY-1…\n", to: path) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == identity.exportSecretKey() + "\n")
    }
}
