import Coffer
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
}
