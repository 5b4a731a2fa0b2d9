import Coffer
import Foundation
import Testing

@testable import CofferCompat

/// Ciphertexts Apple's SecKeyCreateEncryptedData produced (Apple's si-44
/// known-answer test, jedda/ECIES's macOS vectors): every one Coffer
/// supports must decrypt to the recorded plaintext; the others must fail
/// with `unsupported` and a reason, and are listed.
@Suite struct AppleVectorTests {
    struct Vector: Decodable, CustomTestStringConvertible, Sendable {
        var algorithm: String
        var key_size_bits: Int?
        var key_note: String?
        var name: String?
        var private_key_external_b64: String
        var public_key_external_b64: String?
        var ciphertext_b64: String
        var plaintext_hex: String
        var file: String?
        var testDescription: String {
            "\(file ?? "") \(name ?? "") \(algorithm) \(key_size_bits.map { "\($0)-bit" } ?? "")"
        }
    }

    struct VectorFile: Decodable { var vectors: [Vector] }

    static let vectors: [Vector] = ["apple_security_si44_known_ciphertext", "jedda_ECIES_macos_vectors"].flatMap {
        name in
        let url = Bundle.module.resourceURL!.appendingPathComponent("apple-seckey/\(name).json")
        let file = try! JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: url))
        return file.vectors.map {
            var vector = $0
            vector.file = name
            return vector
        }
    }

    static func hex(_ text: String) -> [UInt8] { Hex.decode(text)! }

    enum Outcome: Equatable {
        case passed
        case unsupported(String)
    }

    static func run(_ vector: Vector) throws -> Outcome {
        let algorithm = try AppleAlgorithm(vector.algorithm)
        let key: AppleKey
        do { key = try AppleKey(fileBytes: Array(vector.private_key_external_b64.utf8)) } catch let error as CofferError
        {
            // P-192 keys: swift-crypto has no P-192.
            return .unsupported(
                "key not loadable (\(vector.key_size_bits.map { "\($0)-bit" } ?? "?")): \(error)")
        }
        do {
            let plaintext = try AppleSecKey.decrypt(
                Data(base64Encoded: vector.ciphertext_b64)!, with: key, algorithm: algorithm)
            #expect(Array(plaintext) == hex(vector.plaintext_hex))
            return .passed
        } catch let error as CofferError where error.code == .unsupported {
            return .unsupported(error.description)
        }
    }

    @Test(arguments: vectors)
    func vector(_ vector: Vector) throws {
        let outcome = try Self.run(vector)
        if case .unsupported(let reason) = outcome {
            // Only what is known to be out of reach may be unsupported.
            let expected =
                vector.key_size_bits == 192
                || ["SHA224AESGCM", "SHA384AESGCM", "SHA512AESGCM"].contains {
                    vector.algorithm.hasPrefix("kSecKeyAlgorithmRSA") && vector.algorithm.hasSuffix($0)
                }
            #expect(expected, "unexpectedly unsupported: \(reason)")
            print("UNSUPPORTED \(vector.testDescription): \(reason)")
        }
    }

    /// The counts for the record: passed / supported / total.
    @Test func counts() throws {
        var passed = 0
        var unsupported = 0
        for vector in Self.vectors {
            switch try Self.run(vector) {
            case .passed: passed += 1
            case .unsupported: unsupported += 1
            }
        }
        print(
            "Apple SecKey vectors: \(passed) passed / \(Self.vectors.count - unsupported) supported / \(Self.vectors.count) total"
        )
        #expect(passed == Self.vectors.count - unsupported)
        #expect(Self.vectors.count == 28 && passed == 20)
    }

    /// Each supported vector, damaged anywhere, fails to authenticate.
    @Test func damagedVectorsFail() throws {
        for vector in Self.vectors where (try? Self.run(vector)) == .passed {
            let key = try AppleKey(fileBytes: Array(vector.private_key_external_b64.utf8))
            let algorithm = try AppleAlgorithm(vector.algorithm)
            var ciphertext = Data(base64Encoded: vector.ciphertext_b64)!
            for position in [ciphertext.count - 1, ciphertext.count - 20, ciphertext.count / 2] {
                ciphertext[position] ^= 0x01
                #expect(throws: CofferError.self) {
                    try AppleSecKey.decrypt(ciphertext, with: key, algorithm: algorithm)
                }
                ciphertext[position] ^= 0x01
            }
            #expect(throws: CofferError.self) {
                try AppleSecKey.decrypt(ciphertext.prefix(40), with: key, algorithm: algorithm)
            }
        }
    }
}
