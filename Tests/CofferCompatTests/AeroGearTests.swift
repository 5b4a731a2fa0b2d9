import Coffer
import Crypto
import Foundation
import Testing

@testable import CofferCompat

/// AeroGear-Crypto's key derivation (both lengths, the password quirk)
/// and its AES-128-CBC values, against Python's hashlib and
/// pyca/cryptography (scripts/nacl-peer.py).
@Suite struct AeroGearTests {
    static let passwords = [
        "xmas", "correct horse battery staple", "pässwörd", "日本語のパスワード", "🎁 under the tree 🎄", "naïve café",
    ]

    @Test func thePasswordIsCutToItsUTF16Length() {
        #expect(AeroGear.passwordBytes("xmas") == Array("xmas".utf8))
        // ä is 2 UTF-8 bytes but 1 UTF-16 unit: the last byte is lost.
        #expect(AeroGear.passwordBytes("pä") == [0x70, 0xC3])
        // 🎁 is 4 UTF-8 bytes and 2 UTF-16 units: half of it is kept.
        #expect(AeroGear.passwordBytes("🎁") == [0xF0, 0x9F])
        #expect(AeroGear.passwordBytes("") == [])
    }

    @Test func keysAndCBCValuesMatchAnIndependentImplementation() throws {
        let items = Self.passwords.map { password -> (String, [UInt8], String) in
            let salt = (0..<16).map { _ in UInt8.random(in: 0...255) }
            return (password, salt, "a present for \(password)")
        }
        let input = try items.map { password, salt, text in
            String(
                decoding: try JSONSerialization.data(
                    withJSONObject: ["password": password, "salt": Hex.encode(salt), "text": text]), as: UTF8.self)
        }.joined(separator: "\n")
        let answers = try XSalsa20Poly1305Tests.peer(["aerogear-cbc"], input: input + "\n")
        #expect(answers.count == items.count)
        for ((password, salt, text), answer) in zip(items, answers) {
            let long = try AeroGear.key(password: password, salt: salt, generation: .cbc)
            let short = try AeroGear.key(password: password, salt: salt, generation: .secretBox)
            #expect(long.withUnsafeBytes { Array($0) } == (try XSalsa20Poly1305Tests.hex(answer, "key160")))
            #expect(short.withUnsafeBytes { Array($0) } == (try XSalsa20Poly1305Tests.hex(answer, "key32")))
            let iv = try XSalsa20Poly1305Tests.hex(answer, "iv")
            let sealed = try XSalsa20Poly1305Tests.hex(answer, "sealed")
            #expect(try AeroGear.Generation(ivOrNonce: iv) == .cbc)
            let opened = try AeroGear.open(sealed, ivOrNonce: iv, key: long, generation: .cbc)
            #expect(String(decoding: opened, as: UTF8.self) == text)
            // Another password: wrongPassword, never garbage.
            let wrong = try AeroGear.key(password: password + "!", salt: salt, generation: .cbc)
            let refused = #expect(throws: CofferError.self) {
                try AeroGear.open(sealed, ivOrNonce: iv, key: wrong, generation: .cbc)
            }
            #expect(refused?.code == .wrongPassword)
        }
    }

    @Test func aSecretboxValueUnderAnAeroGearKeyOpensAndAWrongPasswordIsSaid() throws {
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let nonce = (0..<24).map { _ in UInt8.random(in: 0...255) }
        let key = try AeroGear.key(password: "pässwörd", salt: salt, generation: .secretBox)
        let sealed = XSalsa20Poly1305Tests.seal(
            Array("a knitted scarf".utf8), nonce: nonce, key: key.withUnsafeBytes { Array($0) })
        #expect(try AeroGear.Generation(ivOrNonce: nonce) == .secretBox)
        #expect(
            try AeroGear.open(sealed, ivOrNonce: nonce, key: key, generation: .secretBox)
                == Data("a knitted scarf".utf8))
        let wrong = try AeroGear.key(password: "passwörd", salt: salt, generation: .secretBox)
        let refused = #expect(throws: CofferError.self) {
            try AeroGear.open(sealed, ivOrNonce: nonce, key: wrong, generation: .secretBox)
        }
        #expect(refused?.code == .wrongPassword)
        #expect(throws: CofferError.self) { try AeroGear.Generation(ivOrNonce: [UInt8](repeating: 0, count: 12)) }
    }

    /// AeroGear-Crypto's own fixed vectors (AGSecretBoxSpec, and NaCl's
    /// crypto_box example that AGCryptoBoxSpec reuses), provenance in
    /// Resources/VECTORS-PROVENANCE.md.
    @Test func aeroGearsPublishedVectorsOpen() throws {
        let url = Bundle.module.resourceURL!.appendingPathComponent("aerogear/aerogear_crypto_spec_vectors.json")
        let file = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        func bytes(_ item: [String: Any], _ name: String) -> [UInt8] { Hex.decode(item[name] as! String)! }
        let secretboxes = file["secretbox"] as! [[String: Any]]
        let boxes = file["box"] as! [[String: Any]]
        #expect(secretboxes.count == 1 && boxes.count == 1)
        for item in secretboxes {
            let key = SecretBytes(bytes(item, "key"))
            let opened = try AeroGear.open(
                bytes(item, "ciphertext"), ivOrNonce: bytes(item, "nonce"), key: key, generation: .secretBox)
            #expect(Array(opened) == bytes(item, "message"))
            let refused = #expect(throws: CofferError.self) {
                try AeroGear.open(
                    bytes(item, "ciphertext"), ivOrNonce: bytes(item, "nonce"),
                    key: SecretBytes(bytes(item, "corrupted_key")), generation: .secretBox)
            }
            #expect(refused?.code == .wrongPassword)
        }
        for item in boxes {
            // Either side opens it: Bob's box to Alice, read with Alice's
            // private key and Bob's public key, and the other way round.
            for (sender, recipient) in [("bob_public", "alice_private"), ("alice_public", "bob_private")] {
                let opened = try AeroGear.openBox(
                    bytes(item, "ciphertext"), nonce: bytes(item, "nonce"), senderPublicKey: bytes(item, sender),
                    recipientPrivateKey: SecretBytes(bytes(item, recipient)))
                #expect(Array(opened) == bytes(item, "message"))
            }
            // The same bytes are a secretbox under NaCl's "firstkey", which
            // HSalsa20 derives from the X25519 shared secret.
            let shared = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: bytes(item, "alice_private"))
                .sharedSecretFromKeyAgreement(
                    with: try Curve25519.KeyAgreement.PublicKey(rawRepresentation: bytes(item, "bob_public"))
                ).withUnsafeBytes { Array($0) }
            let firstKey = HSalsa20.hash(key: shared, input: [UInt8](repeating: 0, count: 16))
            #expect(firstKey == bytes(item, "nacl_firstkey"))
            let opened = try SecretBox.open(bytes(item, "ciphertext"), nonce: bytes(item, "nonce"), key: firstKey)
            #expect(opened == bytes(item, "message"))
        }
    }

    /// The store and defaults readers, on property lists Foundation writes
    /// in both forms; the CLI suite runs the independent ones.
    @Test func propertyListsInBothFormsAndTheirValueKinds() throws {
        let record: [String: Any] = [
            "id": "A1", "toWhom": "Zoë", "description": Data([1, 2, 3]), "count": 7, "done": true, "price": 2.5,
            "when": Date(timeIntervalSince1970: 1_387_000_000),
        ]
        for format in [PropertyListSerialization.PropertyListFormat.xml, .binary] {
            let bytes = try PropertyListSerialization.data(fromPropertyList: [record], format: format, options: 0)
            let store = try AeroGear.PropertyListStore(propertyList: Array(bytes))
            #expect(store.records.count == 1)
            let fields = store.records[0].fields
            #expect(fields["id"] == .text("A1") && fields["toWhom"] == .text("Zoë"))
            #expect(fields["description"] == .data(Data([1, 2, 3])))
            #expect(fields["count"] == .integer(7) && fields["done"] == .boolean(true) && fields["price"] == .real(2.5))
            #expect(fields["when"] == .date(Date(timeIntervalSince1970: 1_387_000_000)))
            #expect(store.records[0].name == "record 1 (id \"A1\")")
            // A value's description never shows it.
            #expect(!"\(fields["toWhom"]!)".contains("Zo"))
        }
        let encrypted = try PropertyListSerialization.data(
            fromPropertyList: ["A": Data(count: 40)], format: .binary, options: 0)
        let refused = #expect(throws: CofferError.self) {
            try AeroGear.PropertyListStore(propertyList: Array(encrypted))
        }
        #expect(refused?.code == .unsupported)

        let salt = [UInt8](repeating: 7, count: 16)
        let defaults = try PropertyListSerialization.data(
            fromPropertyList: ["xmas.salt": Data(salt), "xmas.nonce": Data(count: 24), "other": "x"], format: .binary,
            options: 0)
        let parameters = try AeroGear.Parameters(defaults: Array(defaults), prefix: "xmas")
        #expect(parameters.generation == .secretBox && parameters.salt == salt && parameters.ivOrNonce.count == 24)
        #expect(throws: CofferError.self) { try AeroGear.Parameters(defaults: Array(defaults), prefix: "gifts") }
        #expect(throws: CofferError.self) {
            try AeroGear.Parameters(defaults: Array(defaults), prefix: "xmas", generation: .cbc)
        }
        #expect(throws: CofferError.self) {
            try AeroGear.Parameters(salt: [1], ivOrNonce: [UInt8](repeating: 0, count: 16))
        }
    }
}
