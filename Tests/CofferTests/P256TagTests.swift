import Crypto
import Foundation
import Testing

@testable import Coffer

@Suite struct P256TagTests {
    let key = P256.KeyAgreement.PrivateKey()

    @Test func keyFormatsGiveTheSameRecipient() throws {
        let fromPKCS8 = try P256Tag.Identity(pem: key.pemRepresentation)
        let fromExternal = try P256Tag.Identity(externalRepresentation: key.x963Representation)
        #expect(key.x963Representation.count == 97)
        #expect(fromPKCS8.recipient.description == fromExternal.recipient.description)
        let parsed = try P256Tag.Recipient(fromPKCS8.recipient.description)
        #expect(parsed.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        #expect(fromPKCS8.recipient.description.hasPrefix("age1tag1"))
        #expect(String(describing: fromPKCS8).contains("redacted"))
        #expect(throws: CofferError(.malformed, "")) {
            try P256Tag.Identity(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        }
        #expect(throws: CofferError(.malformed, "")) {
            try P256Tag.Identity(externalRepresentation: [UInt8](repeating: 4, count: 96))
        }
    }

    @Test(arguments: [0, 1, chunk + 1])
    func roundTrip(size: Int) throws {
        let identity = P256Tag.Identity(privateKey: key)
        let other = P256Tag.Identity(privateKey: P256.KeyAgreement.PrivateKey())
        let file = try Age.encrypt(pattern(size), to: [other.recipient, identity.recipient])
        #expect(Array(try Age.decrypt(file, with: [identity])) == pattern(size))
        #expect(Array(try Age.decrypt(file, with: [other])) == pattern(size))
        #expect(throws: CofferError(.noIdentityMatched, "")) {
            try Age.decrypt(file, with: [P256Tag.Identity(privateKey: P256.KeyAgreement.PrivateKey())])
        }
        // An identity file holding the PEM key opens it too.
        let fromFile = try AgeKeys.identities(fileContents: key.pemRepresentation)
        #expect(Array(try Age.decrypt(file, with: fromFile)) == pattern(size))
    }

    /// Identity files in every P-256 private key format open the file:
    /// PKCS#8 and SEC 1 in PEM and DER, and Apple's 97 bytes.
    @Test func identityFilesInEveryFormat() throws {
        let identity = P256Tag.Identity(privateKey: key)
        let file = try Age.encrypt(pattern(100), to: [identity.recipient])
        let signingKey = AsymmetricPrivateKey.p256(
            try P256.Signing.PrivateKey(rawRepresentation: key.rawRepresentation))
        var files: [[UInt8]] = [Array(key.x963Representation)]
        for format in [KeyFiles.Format.pkcs8, .sec1] {
            for der in [false, true] { files.append(try KeyFiles.encode(signingKey, as: format, der: der)) }
        }
        for bytes in files {
            let identities = try AgeKeys.identities(fileBytes: bytes)
            #expect(Array(try Age.decrypt(file, with: identities)) == pattern(100))
        }
    }

    /// The tag is HKDF-Extract over enc ‖ SHA-256(recipient)[:4]: a stanza
    /// whose tag is changed is not this identity's, so it does not match.
    @Test func stanzaRules() throws {
        let identity = P256Tag.Identity(privateKey: key)
        let stanza = try identity.recipient.wrap(FileKey.random())[0]
        #expect(stanza.arguments[0].count == 6 && stanza.arguments[1].count == 87)
        var wrongTag = stanza
        wrongTag.arguments[0] = Base64.encodeString([0, 0, 0, 0])
        #expect(try identity.unwrap([wrongTag]) == nil)
        var extra = stanza
        extra.arguments.append("x")
        var shortEnc = stanza
        shortEnc.arguments[1] = Base64.encodeString([UInt8](repeating: 4, count: 33))
        var longBody = stanza
        longBody.body.append(1)
        for bad in [extra, shortEnc, longBody] {
            #expect(throws: CofferError(.malformedHeader, "")) { try identity.unwrap([bad]) }
        }
        #expect(try identity.unwrap([stanza]) != nil)
    }
}
