import Crypto
import CryptoExtras
import Foundation

/// RSAES-OAEP of one short message, as SecKeyCreateEncryptedData does with
/// .rsaEncryptionOAEPSHA256 (or .rsaEncryptionOAEPSHA1): MGF1 with the
/// same hash, empty label. swift-crypto's OAEP does the work.
public enum RSAEncryption {
    public enum Hash: String, CaseIterable, Sendable {
        case sha256, sha1

        var padding: _RSA.Encryption.Padding { self == .sha256 ? .PKCS1_OAEP_SHA256 : .PKCS1_OAEP }
        var byteCount: Int { self == .sha256 ? 32 : 20 }
        var name: String { self == .sha256 ? "OAEP-SHA-256" : "OAEP-SHA-1" }
    }

    static func rsaKey(_ key: AsymmetricPublicKey, for operation: String) throws -> _RSA.Encryption.PublicKey {
        guard case .rsa(let rsa) = key else {
            throw CofferError(.invalidArgument, "\(operation) needs an RSA key, not \(key.algorithm)")
        }
        return try _RSA.Encryption.PublicKey(derRepresentation: rsa.derRepresentation)
    }

    /// The largest message a key takes: k − 2h − 2 bytes.
    public static func limit(modulusBits: Int, hash: Hash) -> Int { (modulusBits + 7) / 8 - 2 * hash.byteCount - 2 }

    public static func encrypt(_ message: some DataProtocol, to key: AsymmetricPublicKey, hash: Hash = .sha256) throws -> Data {
        let rsa = try rsaKey(key, for: "RSA encryption")
        let limit = limit(modulusBits: rsa.keySizeInBits, hash: hash)
        guard message.count <= limit else {
            throw CofferError(.invalidArgument, "the message is \(message.count) bytes; RSA \(hash.name) with a \(rsa.keySizeInBits)-bit key takes at most \(limit) bytes (k − 2h − 2)")
        }
        return try rsa.encrypt(message, padding: hash.padding)
    }

    public static func decrypt(_ ciphertext: some DataProtocol, with key: AsymmetricPrivateKey, hash: Hash = .sha256) throws -> Data {
        guard case .rsa(let signing) = key else {
            throw CofferError(.invalidArgument, "RSA decryption needs an RSA private key, not \(key.algorithm)")
        }
        let rsa = try _RSA.Encryption.PrivateKey(derRepresentation: signing.derRepresentation)
        let k = (rsa.keySizeInBits + 7) / 8
        guard ciphertext.count == k else {
            throw CofferError(.malformed, "an RSA ciphertext for a \(rsa.keySizeInBits)-bit key is exactly \(k) bytes, not \(ciphertext.count)")
        }
        do { return try rsa.decrypt(ciphertext, padding: hash.padding) } catch {
            throw CofferError(.payloadAuthenticationFailed, "RSA \(hash.name) decryption failed: wrong key, wrong hash (--hash), or damaged ciphertext")
        }
    }
}
