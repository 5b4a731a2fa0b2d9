import Crypto
import CryptoExtras
import Foundation

/// RSAES-OAEP of one short message, as SecKeyCreateEncryptedData does with
/// .rsaEncryptionOAEPSHA256 (or .rsaEncryptionOAEPSHA1): MGF1 with the
/// same hash, empty label. swift-crypto's OAEP does the work.
public enum RSAEncryption {
    /// OAEP's hash (and MGF1's). A struct with static members, so that a
    /// later release can add one without breaking switches; parsed and
    /// printed by its raw value (`sha256`, `sha1`).
    public struct Hash: RawRepresentable, Hashable, Sendable, CaseIterable, CustomStringConvertible, OpenNameSet {
        package enum Kind: String, CaseIterable, Sendable {
            case sha256, sha1
        }
        package let kind: Kind
        package init(_ kind: Kind) { self.kind = kind }

        /// SHA-256 (SecKey's rsaEncryptionOAEPSHA256).
        public static let sha256 = Hash(.sha256)
        /// SHA-1 (SecKey's rsaEncryptionOAEPSHA1), for peers that still use it.
        public static let sha1 = Hash(.sha1)

        var padding: _RSA.Encryption.Padding {
            switch kind {
            case .sha256: .PKCS1_OAEP_SHA256
            case .sha1: .PKCS1_OAEP
            }
        }
        var byteCount: Int {
            switch kind {
            case .sha256: 32
            case .sha1: 20
            }
        }
        var name: String {
            switch kind {
            case .sha256: "OAEP-SHA-256"
            case .sha1: "OAEP-SHA-1"
            }
        }
    }

    /// The largest message a key takes: k − 2h − 2 bytes.
    public static func limit(modulusBits: Int, hash: Hash) -> Int { (modulusBits + 7) / 8 - 2 * hash.byteCount - 2 }

    // swift-crypto does not mark _RSA.Encryption keys Sendable (its
    // _RSA.Signing keys are). Both wrap an immutable BoringSSL EVP_PKEY that
    // is only read, as the Signing keys' conformance already relies on.

    /// A public key made ready for repeated encryptions.
    public struct Encryptor: @unchecked Sendable {  // holds an immutable BoringSSL key, only read
        let key: _RSA.Encryption.PublicKey
        public let hash: Hash
        /// The largest message this key takes.
        public let limit: Int

        public init(publicKey: AsymmetricPublicKey, hash: Hash = .sha256) throws {
            guard case .rsa(let rsa) = publicKey else {
                throw CofferError(.invalidArgument, "RSA encryption needs an RSA key, not \(publicKey.algorithm)")
            }
            key = try _RSA.Encryption.PublicKey(derRepresentation: rsa.derRepresentation)
            self.hash = hash
            limit = RSAEncryption.limit(modulusBits: key.keySizeInBits, hash: hash)
        }

        public func encrypt(_ message: some DataProtocol) throws -> Data {
            guard message.count <= limit else {
                throw CofferError(
                    .invalidArgument,
                    "the message is \(message.count) bytes; RSA \(hash.name) with a \(key.keySizeInBits)-bit key takes at most \(limit) bytes (k − 2h − 2)"
                )
            }
            return try key.encrypt(message, padding: hash.padding)
        }
    }

    /// A private key made ready for repeated decryptions.
    public struct Decryptor: @unchecked Sendable {  // holds an immutable BoringSSL key, only read
        let key: _RSA.Encryption.PrivateKey
        public let hash: Hash
        let k: Int

        public init(privateKey: AsymmetricPrivateKey, hash: Hash = .sha256) throws {
            guard case .rsa(let signing) = privateKey else {
                throw CofferError(
                    .invalidArgument, "RSA decryption needs an RSA private key, not \(privateKey.algorithm)")
            }
            key = try _RSA.Encryption.PrivateKey(derRepresentation: signing.derRepresentation)
            self.hash = hash
            k = (key.keySizeInBits + 7) / 8
        }

        public func decrypt(_ ciphertext: some DataProtocol) throws -> Data {
            guard ciphertext.count == k else {
                throw CofferError(
                    .malformed,
                    "an RSA ciphertext for a \(key.keySizeInBits)-bit key is exactly \(k) bytes, not \(ciphertext.count)"
                )
            }
            do { return try key.decrypt(ciphertext, padding: hash.padding) } catch {
                throw CofferError(
                    .payloadAuthenticationFailed,
                    "RSA \(hash.name) decryption failed: wrong key, wrong hash (--hash), or damaged ciphertext")
            }
        }
    }

    public static func encrypt(_ message: some DataProtocol, to key: AsymmetricPublicKey, hash: Hash = .sha256) throws
        -> Data
    {
        try Encryptor(publicKey: key, hash: hash).encrypt(message)
    }

    public static func decrypt(_ ciphertext: some DataProtocol, with key: AsymmetricPrivateKey, hash: Hash = .sha256)
        throws -> Data
    {
        try Decryptor(privateKey: key, hash: hash).decrypt(ciphertext)
    }
}
