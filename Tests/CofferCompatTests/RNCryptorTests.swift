import Coffer
import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import CofferCompat

/// RNCryptor-Spec's v3 vectors: every KDF, key and password vector, each
/// message decrypted, and re-encrypted byte for byte with the vector's
/// salts and IV.
@Suite struct RNCryptorTests {
    struct Vector: CustomTestStringConvertible, Sendable {
        var file: String
        var fields: [String: String]
        var testDescription: String { "\(file): \(fields["title"] ?? "?")" }
        func text(_ name: String) -> String { fields[name] ?? "" }
        func hex(_ name: String) -> [UInt8] { Hex.decode(text(name))! }
    }

    static func load(_ file: String) -> [Vector] {
        let url = Bundle.module.resourceURL!.appendingPathComponent("rncryptor-v3/\(file)")
        let text = try! String(contentsOf: url, encoding: .utf8)
        var vectors: [Vector] = []
        var current: [String: String] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) + [""] {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") {
                if trimmed.isEmpty, current["title"] != nil {
                    vectors.append(Vector(file: file, fields: current))
                    current = [:]
                }
                continue
            }
            guard let colon = trimmed.firstIndex(of: ":") else { continue }
            current[String(trimmed[..<colon])] = trimmed[trimmed.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return vectors
    }

    static let kdf = load("kdf"), key = load("key"), password = load("password")

    @Test func vectorCounts() {
        #expect(Self.kdf.count == 6 && Self.key.count == 4 && Self.password.count == 6)
        print(
            "RNCryptor vectors: \(Self.kdf.count + Self.key.count + Self.password.count) total (6 kdf, 4 key, 6 password)"
        )
    }

    @Test(arguments: kdf)
    func keyDerivation(_ vector: Vector) throws {
        #expect(vector.text("version") == "3")
        let key = try RNCryptor.key(password: Array(vector.text("password").utf8), salt: vector.hex("salt_hex"))
        #expect(key.withUnsafeBytes { Array($0) } == vector.hex("key_hex"))
    }

    @Test(arguments: key)
    func keyBased(_ vector: Vector) throws {
        let credentials = RNCryptor.Credentials.keys(
            encryption: SymmetricKey(data: vector.hex("enc_key_hex")),
            hmac: SymmetricKey(data: vector.hex("hmac_key_hex")))
        let ciphertext = vector.hex("ciphertext_hex")
        #expect(Array(try RNCryptor.decrypt(ciphertext, credentials: credentials)) == vector.hex("plaintext_hex"))
        let again = try RNCryptor.encrypt(
            vector.hex("plaintext_hex"), credentials: credentials, encryptionSalt: [], hmacSalt: [],
            iv: vector.hex("iv_hex"))
        #expect(Array(again) == ciphertext)
    }

    @Test(arguments: password)
    func passwordBased(_ vector: Vector) throws {
        let credentials = RNCryptor.Credentials.password(Array(vector.text("password").utf8))
        let ciphertext = vector.hex("ciphertext_hex")
        #expect(Array(try RNCryptor.decrypt(ciphertext, credentials: credentials)) == vector.hex("plaintext_hex"))
        let again = try RNCryptor.encrypt(
            vector.hex("plaintext_hex"), credentials: credentials,
            encryptionSalt: vector.hex("enc_salt_hex"), hmacSalt: vector.hex("hmac_salt_hex"), iv: vector.hex("iv_hex"))
        #expect(Array(again) == ciphertext)
    }

    @Test func roundTripsAtBlockAndBufferBoundaries() throws {
        let credentials = RNCryptor.Credentials.keys(
            encryption: SymmetricKey(size: .bits256), hmac: SymmetricKey(size: .bits256))
        for size in [0, 1, 15, 16, 17, 65535, 65536, 65537, 200_000] {
            let plaintext = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let message = try RNCryptor.encrypt(plaintext, credentials: credentials)
            #expect(message.count == 18 + (size / 16 + 1) * 16 + 32)
            #expect(Array(try RNCryptor.decrypt(message, credentials: credentials)) == plaintext)
        }
    }

    /// Hostile input: every failure is a CofferError, and nothing is
    /// decrypted (the sink stays empty) unless the HMAC matched.
    @Test func hostileMessages() throws {
        let credentials = RNCryptor.Credentials.password(Array("thepassword".utf8))
        let good = Array(try RNCryptor.encrypt(Array("a secret of some length".utf8), credentials: credentials))
        func expectFailure(
            _ message: [UInt8], _ code: CofferError.Code, _ credentials: RNCryptor.Credentials = credentials,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            var source = BufferSource(message)
            var sink = BufferSink()
            do {
                try RNCryptor.decrypt(from: &source, to: &sink, credentials: credentials)
                Issue.record("accepted", sourceLocation: sourceLocation)
            } catch let error as CofferError {
                #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            } catch { Issue.record("\(error)", sourceLocation: sourceLocation) }
            #expect(sink.bytes.isEmpty, sourceLocation: sourceLocation)
        }
        expectFailure([], .malformed)
        expectFailure([3], .malformed)
        expectFailure([2] + good.dropFirst(), .unsupported)
        expectFailure([3, 7] + good.dropFirst(2), .malformed)
        expectFailure(Array(good.dropLast()), .malformed)
        expectFailure(Array(good.prefix(34 + 32)), .malformed)  // no ciphertext
        for position in [1 + 1, 5, 20, 40, good.count - 40, good.count - 1] where position > 1 {
            var damaged = good
            damaged[position] ^= 0x20
            expectFailure(damaged, .payloadAuthenticationFailed)
        }
        expectFailure(good, .payloadAuthenticationFailed, .password(Array("wrong".utf8)))
        expectFailure(
            good, .invalidArgument, .keys(encryption: SymmetricKey(size: .bits256), hmac: SymmetricKey(size: .bits256)))
        #expect(throws: CofferError.self) { try RNCryptor.Credentials.keyFile([UInt8](repeating: 0, count: 63)) }
        // Bad padding under a valid HMAC: the encryptor was broken; refused as malformed.
        let keys = RNCryptor.Credentials.keys(
            encryption: SymmetricKey(size: .bits256), hmac: SymmetricKey(size: .bits256))
        guard case let .keys(encryptionKey, hmacKey) = keys else { return }
        let iv = [UInt8](repeating: 9, count: 16)
        let body = Array(
            try AES._CBC.encrypt(
                [UInt8](repeating: 0, count: 16), using: encryptionKey, iv: AES._CBC.IV(ivBytes: iv), noPadding: true))
        let unsigned: [UInt8] = [3, 0] + iv + body
        let signed = unsigned + Array(HMAC<SHA256>.authenticationCode(for: unsigned, using: hmacKey))
        expectFailure(signed, .malformed, keys)
    }
}
