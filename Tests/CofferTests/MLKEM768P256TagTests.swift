import Crypto
import Foundation
import Testing

@testable import Coffer

@Suite struct MLKEM768P256TagTests {
    /// HPKEBase's key schedule, run over swift-crypto's X-Wing KEM, must
    /// produce what swift-crypto's own HPKE opens: the schedule that the
    /// MLKEM768-P256 recipient uses is thereby checked against an
    /// independent implementation of RFC 9180.
    @Test func keyScheduleMatchesSwiftCryptoHPKE() throws {
        let recipientKey = try XWingMLKEM768X25519.PrivateKey.generate()
        let info = Data("coffer key schedule check".utf8)
        let encapsulation = try recipientKey.publicKey.encapsulate()
        let context = HPKEBase.keySchedule(kem: 0x647a, sharedSecret: encapsulation.sharedSecret, info: info)
        let message = Data("sixteen-byte key".utf8)
        let sealed = try HPKEBase.seal(message, context: context)
        var receiver = try HPKE.Recipient(
            privateKey: recipientKey,
            ciphersuite: HPKE.Ciphersuite(kem: .XWingMLKEM768X25519, kdf: .HKDF_SHA256, aead: .chaChaPoly),
            info: info, encapsulatedKey: encapsulation.encapsulated)
        #expect(try receiver.open(sealed, authenticating: Data()) == message)
        #expect(try HPKEBase.open(sealed, context: context) == message)
        var flipped = sealed
        flipped[0] ^= 1
        #expect(throws: (any Error).self) { try HPKEBase.open(flipped, context: context) }
    }

    @Test(arguments: [0, 1, chunk + 1])
    func roundTrip(size: Int) throws {
        let identity = try MLKEM768P256Tag.Identity()
        let other = try MLKEM768P256Tag.Identity()
        let file = try Age.encrypt(pattern(size), to: [other.recipient, identity.recipient])
        #expect(Array(try Age.decrypt(file, with: [identity])) == pattern(size))
        #expect(Array(try Age.decrypt(file, with: [other])) == pattern(size))
        #expect(throws: CofferError(.noIdentityMatched, "")) {
            try Age.decrypt(file, with: [try MLKEM768P256Tag.Identity()])
        }
    }

    @Test func encodings() throws {
        let identity = try MLKEM768P256Tag.Identity()
        let recipient = identity.recipient.description
        #expect(recipient.hasPrefix("age1tagpq1") && recipient.count == 2015)
        #expect(try MLKEM768P256Tag.Recipient(recipient).description == recipient)
        let exported = identity.exportSecretKey()
        #expect(exported.hasPrefix("COFFER-TAGPQ-SECRET-KEY-1"))
        #expect(try MLKEM768P256Tag.Identity(exported).recipient.description == recipient)
        #expect(try AgeKeys.identities(fileContents: "# a comment\n\(exported)\n").count == 1)
        #expect(String(describing: identity).contains("redacted") && !String(describing: identity).contains(exported))
        // A recipient whose P-256 half is not on the curve, or is compressed.
        var bytes = identity.recipient.bytes
        bytes[bytes.count - 1] ^= 1
        #expect(throws: CofferError(.malformed, "")) {
            try MLKEM768P256Tag.Recipient(Bech32.encode(hrp: "age1tagpq", data: bytes))
        }
        #expect(throws: CofferError(.malformed, "")) {
            try MLKEM768P256Tag.Recipient(
                Bech32.encode(hrp: "age1tagpq", data: identity.recipient.bytes.prefix(1184 + 33)))
        }
        #expect(throws: CofferError(.malformed, "")) { try MLKEM768P256Tag.Identity(String(exported.dropLast())) }
    }

    @Test func stanzaRules() throws {
        let identity = try MLKEM768P256Tag.Identity()
        let stanza = try identity.recipient.wrap(FileKey.random())[0]
        #expect(stanza.type == "mlkem768p256tag" && stanza.arguments.count == 2)
        var wrongTag = stanza
        wrongTag.arguments[0] = Base64.encodeString([0, 0, 0, 0])
        #expect(try identity.unwrap([wrongTag]) == nil)
        var extra = stanza
        extra.arguments.append("x")
        var shortEnc = stanza
        shortEnc.arguments[1] = Base64.encodeString([UInt8](repeating: 4, count: 1152))
        var longBody = stanza
        longBody.body.append(1)
        var shortTag = stanza
        shortTag.arguments[0] = Base64.encodeString([1, 2, 3])
        for bad in [extra, shortEnc, longBody, shortTag] {
            #expect(throws: CofferError(.malformedHeader, "")) { try identity.unwrap([bad]) }
        }
        // A damaged ML-KEM ciphertext keeps the tag (which covers only the
        // P-256 part's position in enc) wrong, so the stanza is skipped.
        var damaged = stanza
        var enc = Base64.decode(stanza.arguments[1])!
        enc[10] ^= 1
        damaged.arguments[1] = Base64.encodeString(enc)
        #expect(try identity.unwrap([damaged]) == nil)
        #expect(try identity.unwrap([stanza]) != nil)
    }
}
