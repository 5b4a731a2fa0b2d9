import Crypto
import CryptoExtras
import Foundation
import PropertyBased
import Testing

@testable import Coffer

func hexBytes(_ text: String) -> [UInt8] { Hex.decode(text)! }

@Suite struct SealedValueTests {
    let ring = KeyRing()

    /// The committed vectors, made by scripts/make-sealed-vectors.py with
    /// Python's cryptography: they open, in both forms, and Coffer
    /// reproduces each byte for byte from its nonce, so the format cannot drift.
    @Test func committedVectors() throws {
        struct File: Decodable {
            struct Vector: Decodable {
                var title, key_hex, context_hex, plaintext_hex, sealed_hex, text: String
                var key_id: UInt32
            }
            var vectors: [Vector]
        }
        let url = Bundle.module.resourceURL!.appendingPathComponent("sealed-v1/vectors.json")
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        #expect(file.vectors.count == 6)
        for vector in file.vectors {
            let key = SymmetricKey(data: hexBytes(vector.key_hex))
            let ring = KeyRing(entries: [KeyRing.Entry(id: vector.key_id, state: .primary, created: 0, key: key)])
            let sealed = hexBytes(vector.sealed_hex)
            let context = hexBytes(vector.context_hex)
            #expect(Array(try ring.open(sealed, context: context)) == hexBytes(vector.plaintext_hex), "\(vector.title)")
            #expect(
                Array(try ring.open(try SealedValue.binary(Array(vector.text.utf8)), context: context))
                    == hexBytes(vector.plaintext_hex))
            #expect(SealedValue.text(sealed) == vector.text)
            let nonce = try AES.GCM._SIV.Nonce(data: sealed[5..<17])
            let again = try SealedValue.seal(
                hexBytes(vector.plaintext_hex), keyID: vector.key_id, key: key, context: context, nonce: nonce)
            #expect(Array(again) == sealed, "\(vector.title)")
        }
    }

    /// RFC 8452 Appendix C.2 (AEAD_AES_256_GCM_SIV) through Coffer's AEAD calls.
    @Test func rfc8452Vectors() throws {
        let one = "0100000000000000000000000000000000000000000000000000000000000000"
        let nonce3 = "030000000000000000000000"
        let cases: [(key: String, nonce: String, aad: String, plaintext: String, result: String)] = [
            (one, nonce3, "", "", "07f5f4169bbf55a8400cd47ea6fd400f"),
            (one, nonce3, "", "0100000000000000", "c2ef328e5c71c83b843122130f7364b761e0b97427e3df28"),
            (
                one, nonce3, "", "01000000000000000000000000000000",
                "85a01b63025ba19b7fd3ddfc033b3e76c9eac6fa700942702e90862383c6c366"
            ),
            (one, nonce3, "01", "0200000000000000", "1de22967237a813291213f267e3b452f02d01ae33e4ec854"),
            (one, nonce3, "010000000000000000000000", "02000000", "22b3f4cd1835e517741dfddccfa07fa4661b74cf"),
            (
                "e66021d5eb8e4f4066d4adb9c33560e4f46e44bb3da0015c94f7088736864200", "e0eaf5284d884a0e77d31646", "", "",
                "169fbb2fbf389a995f6390af22228a62"
            ),
            (
                "bae8e37fc83441b16034566b7a806c46bb91c3c5aedb64a6c590bc84d1a5e269", "e4b47801afc0577e34699b9e",
                "4fbdc66f14", "671fdd", "0eaccb93da9bb81333aee0c785b240d319719d"
            ),
            (
                "3c535de192eaed3822a2fbbe2ca9dfc88255e14a661b8aa82cc54236093bbc23", "688089e55540db1872504e1c",
                "734320ccc9d9bbbb19cb81b2af4ecbc3e72834321f7aa0f70b7282b4f33df23f167541",
                "ced532ce4159b035277d4dfbb7db62968b13cd4eec",
                "626660c26ea6612fb17ad91e8e767639edd6c9faee9d6c7029675b89eaf4ba1ded1a286594"
            ),
        ]
        for test in cases {
            let key = SymmetricKey(data: hexBytes(test.key))
            let nonce = try AES.GCM._SIV.Nonce(data: hexBytes(test.nonce))
            let sealed = try SealedValue.aeadSeal(
                hexBytes(test.plaintext), key: key, nonce: nonce, associatedData: hexBytes(test.aad))
            #expect(Array(sealed) == hexBytes(test.nonce) + hexBytes(test.result))
            #expect(
                Array(try SealedValue.aeadOpen(sealed, key: key, associatedData: hexBytes(test.aad)))
                    == hexBytes(test.plaintext))
        }
    }

    @Test func roundTripsAndForms() throws {
        for size in [0, 1, 15, 16, 17, 64, 1000, 4096] {
            let plaintext = pattern(size)
            let sealed = try ring.seal(plaintext, context: Array("notes/42/description".utf8))
            #expect(sealed.count == size + SealedValue.overhead)
            #expect(Array(try ring.open(sealed, context: Array("notes/42/description".utf8))) == plaintext)
            let text = SealedValue.text(sealed)
            #expect(text.hasPrefix("cs1.") && !text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(try SealedValue.binary(Array(text.utf8)) == sealed)
            #expect(try SealedValue.binary(sealed) == sealed)
        }
        // The same plaintext twice: different nonces, different values.
        #expect(try ring.seal([1, 2, 3], context: []) != ring.seal([1, 2, 3], context: []))
    }

    @Test func propertyRoundTrip() async {
        let ring = self.ring
        await propertyCheck(count: 200, input: Gen.int(in: 0...4096), Gen.int(in: 0...64)) { size, contextLength in
            let context = (0..<contextLength).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ size) }
            let plaintext = pattern(size, seed: UInt8(truncatingIfNeeded: contextLength))
            let sealed = try ring.seal(plaintext, context: context)
            #expect(
                Array(try ring.open(try SealedValue.binary(Array(SealedValue.text(sealed).utf8)), context: context))
                    == plaintext)
            #expect(throws: CofferError.self) { try ring.open(sealed, context: context + [0]) }
        }
    }

    /// Every single-bit flip fails, each with the error its field calls for.
    @Test func everyBitFlipIsRejected() throws {
        let context = Array("users/7/token".utf8)
        let sealed = Array(try ring.seal(Array("a 20-byte secret val".utf8), context: context))
        var counts: [String: Int] = [:]
        for bit in 0..<(sealed.count * 8) {
            var flipped = sealed
            flipped[bit / 8] ^= 1 << UInt8(bit % 8)
            do {
                _ = try ring.open(flipped, context: context)
                Issue.record("bit \(bit) accepted")
            } catch let error as CofferError {
                counts[error.code.name, default: 0] += 1
                let expected: CofferError.Code =
                    bit < 8 ? .unsupported : bit < 40 ? .keyNotFound : .payloadAuthenticationFailed
                #expect(error.code == expected, "bit \(bit): \(error)")
            }
        }
        #expect(counts.values.reduce(0, +) == sealed.count * 8)
    }

    @Test func wrongPlacesAndShapes() throws {
        let sealed = try ring.seal(Array("value".utf8), context: Array("a".utf8))
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try ring.open(sealed, context: Array("b".utf8))
        }
        #expect(throws: CofferError(.keyNotFound, "")) { try KeyRing().open(sealed, context: Array("a".utf8)) }
        #expect(throws: CofferError(.malformed, "")) { try ring.open(sealed.prefix(32), context: Array("a".utf8)) }
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try ring.open(sealed.dropLast(), context: Array("a".utf8))
        }
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try ring.open(sealed + [0], context: Array("a".utf8))
        }
        let text = SealedValue.text(sealed)
        // One line ending may follow the text form; nothing else may.
        for good in [text + "\n", text + "\r\n"] { #expect(try SealedValue.binary(Array(good.utf8)) == sealed) }
        for bad in [
            text + "=", "cs1.", "cs1.A", text.replacingOccurrences(of: "cs1.", with: "cs1.*"), text + "A",
            text + "\r", text + " \n", text + "\n\n", text + "\t", "cs1. " + text.dropFirst(4), text + "\u{A0}",
        ] {
            #expect(throws: CofferError.self) {
                try ring.open(try SealedValue.binary(Array(bad.utf8)), context: Array("a".utf8))
            }
        }
        // Nothing about a key ring's keys shows in its description or dump.
        var dump = ""
        Swift.dump(ring, to: &dump)
        let keyBytes = ring.entries[0].key.withUnsafeBytes { Data($0).base64EncodedString() }
        #expect(!dump.contains(keyBytes) && !String(describing: ring).contains(keyBytes))
        #expect(!dump.contains("SymmetricKey"))
    }

    @Test func rotationRewrapAndDisable() throws {
        var ring = KeyRing()
        var values: [(UInt32, Data)] = []
        for round in 0..<5 {
            values.append((ring.primaryID, try ring.seal(pattern(round * 10), context: Array("c".utf8))))
            try ring.rotate()
        }
        #expect(ring.keys.count == 6 && ring.keys.filter { $0.state == .primary }.count == 1)
        for (round, (_, value)) in values.enumerated() {
            #expect(Array(try ring.open(value, context: Array("c".utf8))) == pattern(round * 10))
            let rewrapped = try ring.rewrap(value, context: Array("c".utf8))
            #expect(try SealedValue.keyID(of: rewrapped) == ring.primaryID)
            #expect(Array(try ring.open(rewrapped, context: Array("c".utf8))) == pattern(round * 10))
        }
        try ring.disable(values[0].0)
        #expect(throws: CofferError(.keyDisabled, "")) { try ring.open(values[0].1, context: Array("c".utf8)) }
        #expect(throws: CofferError(.keyDisabled, "")) { try ring.rewrap(values[0].1, context: Array("c".utf8)) }
        #expect(throws: CofferError(.invalidArgument, "")) { try ring.disable(ring.primaryID) }
        #expect(throws: CofferError(.keyNotFound, "")) { try ring.disable(12345) }
        // Enabled again, the key opens its values; the primary stays the primary.
        let primary = ring.primaryID
        try ring.enable(values[0].0)
        #expect(Array(try ring.open(values[0].1, context: Array("c".utf8))) == pattern(0))
        #expect(ring.primaryID == primary && ring.keys.first { $0.id == values[0].0 }?.state == .active)
        #expect(throws: CofferError(.invalidArgument, "")) { try ring.enable(values[0].0) }
        #expect(throws: CofferError(.invalidArgument, "")) { try ring.enable(primary) }
        #expect(throws: CofferError(.keyNotFound, "")) { try ring.enable(12345) }
    }
}

@Suite struct KeyRingFileTests {
    static let fast = PasswordKDF.scrypt(logN: 10, r: 8, p: 1)
    let password = Array("the first password".utf8)

    @Test func passwordChangeKeepsValuesAndRetiresTheOldPassword() throws {
        var file = try KeyRingFile(keyRing: KeyRing(), secret: .password(password), kdf: Self.fast)
        let value = try file.keyRing.seal(Array("kept".utf8), context: Array("x".utf8))
        let before = try file.contents()
        let oldPrimary = file.keyRing.primaryID
        try file.changeSecret(to: .password(Array("the second one".utf8)), kdf: Self.fast)
        let after = try file.contents()
        // One more key (id 4, state 1, created 8, key 32): the change adds a new primary (F3).
        #expect(after.count == before.count + 45)
        #expect(file.keyRing.primaryID != oldPrimary)
        let reopened = try KeyRingFile(contents: after, secret: .password(Array("the second one".utf8)))
        #expect(Array(try reopened.keyRing.open(value, context: Array("x".utf8))) == Array("kept".utf8))
        #expect(throws: CofferError(.wrongPassword, "")) {
            try KeyRingFile(contents: after, secret: .password(self.password))
        }
        // And to a raw KEK and back.
        let kek = SymmetricKey(size: .bits256)
        try file.changeSecret(to: .key(kek))
        let raw = try KeyRingFile(contents: try file.contents(), secret: .key(kek))
        #expect(Array(try raw.keyRing.open(value, context: Array("x".utf8))) == Array("kept".utf8))
        #expect(throws: CofferError(.wrongPassword, "")) {
            try KeyRingFile(contents: try file.contents(), secret: .key(SymmetricKey(size: .bits256)))
        }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try KeyRingFile(contents: try file.contents(), secret: .password(self.password))
        }
    }

    @Test func tamperingIsNotAWrongPassword() throws {
        let file = try KeyRingFile(keyRing: KeyRing(), secret: .password(password), kdf: Self.fast)
        let contents = Array(try file.contents())
        var body = contents
        body[body.count - 20] ^= 1
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try KeyRingFile(contents: body, secret: .password(self.password))
        }
        #expect(throws: CofferError(.wrongPassword, "")) {
            try KeyRingFile(contents: contents, secret: .password(Array("nope".utf8)))
        }
        for length in [0, 4, 8, 30, 60, contents.count - 1] {
            #expect(throws: CofferError.self) {
                try KeyRingFile(contents: contents.prefix(length), secret: .password(self.password))
            }
        }
        #expect(throws: CofferError(.malformed, "")) {
            try KeyRingFile(contents: Array("XXXX".utf8) + contents.dropFirst(4), secret: .password(self.password))
        }
    }

    /// Parameters above the cap are refused at once, before any derivation.
    @Test func capsAreCheckedBeforeWork() throws {
        let file = try KeyRingFile(keyRing: KeyRing(), secret: .password(password), kdf: Self.fast)
        var contents = Array(try file.contents())
        contents[30] = 40  // log2 N = 40 (the slot's kind is byte 29, its parameters follow)
        let start = Date()
        #expect(throws: CofferError(.unsupported, "")) {
            try KeyRingFile(contents: contents, secret: .password(self.password))
        }
        #expect(Date().timeIntervalSince(start) < 1)
        var pbkdf2 = Array(
            try KeyRingFile(keyRing: KeyRing(), secret: .password(password), kdf: .pbkdf2SHA256(rounds: 1000))
                .contents())
        pbkdf2[30...33] = [0xff, 0xff, 0xff, 0xff][...]
        #expect(throws: CofferError(.unsupported, "")) {
            try KeyRingFile(contents: pbkdf2, secret: .password(self.password))
        }
    }

    @Test func weakParametersOpenAndReportAnUpgrade() throws {
        let weak = try KeyRingFile(keyRing: KeyRing(), secret: .password(password), kdf: .pbkdf2SHA256(rounds: 1000))
        var opened = try KeyRingFile(contents: try weak.contents(), secret: .password(password))
        #expect(opened.upgradeDue && opened.kdf == .pbkdf2SHA256(rounds: 1000))
        try opened.upgrade(.password(password))
        let upgraded = try KeyRingFile(contents: try opened.contents(), secret: .password(password))
        #expect(!upgraded.upgradeDue && upgraded.kdf == .defaultPBKDF2)
        #expect(upgraded.keyRing.primaryID == weak.keyRing.primaryID)
        #expect(!PasswordKDF.defaultScrypt.isBelowCurrentDefault && Self.fast.isBelowCurrentDefault)
    }
}
