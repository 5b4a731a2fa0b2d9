import Coffer
import Crypto
import Foundation
import Testing

/// Recovery keys (docs/key-slots.md, "Recovery keys") against vectors made
/// by Python's hashlib and base64 (scripts/make-recovery-key-vectors.py).
@Suite struct RecoveryKeyTests {
    struct Vectors: Decodable {
        struct Vector: Decodable {
            let key: String
            let text: String
        }
        let vectors: [Vector]
    }

    static func vectors() throws -> [Vectors.Vector] {
        let url = Bundle.module.resourceURL!.appendingPathComponent("recovery-key-v1/vectors.json")
        return try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url)).vectors
    }

    static func keyBytes(_ recovery: RecoveryKey) -> [UInt8] { recovery.key.withUnsafeBytes { Array($0) } }

    @Test func eachVectorReadsAsItsKeyAndIsWrittenAsItsText() throws {
        let vectors = try Self.vectors()
        #expect(vectors.count == 5)
        for vector in vectors {
            let read = try RecoveryKey(text: vector.text)
            #expect(Self.keyBytes(read) == KeySlotTests.bytes(vector.key))
            #expect(read.text == vector.text)
            // Any case, spaces for hyphens, surrounding spaces.
            let typed = " " + vector.text.lowercased().replacingOccurrences(of: "-", with: " ") + " "
            #expect(Self.keyBytes(try RecoveryKey(text: typed)) == KeySlotTests.bytes(vector.key))
        }
    }

    /// Every single-character change of a vector's text is refused: the
    /// check bytes catch it, or (for the last character) its spare bits.
    @Test func everyOneCharacterTypoIsRefused() throws {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        let vector = try Self.vectors()[3]
        let symbols = Array(vector.text.filter { $0 != "-" })
        var refused = 0
        for position in symbols.indices {
            for replacement in alphabet where replacement != symbols[position] {
                var typo = symbols
                typo[position] = replacement
                #expect(throws: CofferError.self) { try RecoveryKey(text: String(typo)) }
                refused += 1
            }
        }
        #expect(refused == 55 * 31)
    }

    @Test func malformedTextsSayWhatIsWrong() {
        for (text, says) in [
            ("", "has 55 letters and digits; this has 0"),
            ("AAAAA-AAAAA", "this has 10"),
            (String(repeating: "A", count: 54) + "1", "another character"),
            (String(repeating: "A", count: 54) + "0", "another character"),
            (String(repeating: "A", count: 56), "this has 56"),
        ] {
            do {
                _ = try RecoveryKey(text: text)
                Issue.record("\(text) was read")
            } catch let error as CofferError {
                #expect(error.code == .malformed)
                #expect(error.description.contains(says), "\(error)")
            } catch { Issue.record("\(error)") }
        }
    }

    @Test func aNewKeyIsRandomAndNeverPrinted() throws {
        let one = RecoveryKey()
        let two = RecoveryKey()
        #expect(one.text != two.text)
        #expect(Self.keyBytes(try RecoveryKey(text: one.text)) == Self.keyBytes(one))
        for shown in [
            "\(one)", String(reflecting: one),
            {
                var out = ""
                dump(one, to: &out)
                return out
            }(),
        ] {
            #expect(!shown.contains(one.text.prefix(5)))
        }
    }

    /// A key ring slot made for a recovery key opens with its text.
    @Test func aRingOpensWithItsRecoveryKey() throws {
        let recovery = RecoveryKey()
        var file = try KeyRingFile(
            keyRing: KeyRing(), secret: .password(Array("pw".utf8)), kdf: .scrypt(logN: 10, r: 8, p: 1))
        try file.addSlot(for: recovery.unlockSecret)
        let contents = try file.contents()
        let opened = try KeyRingFile(contents: contents, secret: try .recoveryKey(recovery.text.lowercased()))
        #expect(opened.keyRing.primaryID == file.keyRing.primaryID)
        #expect(try opened.slotIndex(openedBy: recovery.unlockSecret) == 1)
    }
}
