import Coffer
import Crypto
import CryptoExtras
import Foundation

/// A key as SecKey works with it: an EC key on P-256/384/521 (public, or
/// private with its public half) or an RSA key (public or private).
public enum AppleKey: Sendable, CustomStringConvertible {
    case ecPublic(AsymmetricPublicKey)
    case ecPrivate(AsymmetricPrivateKey)
    case rsaPublic(RSAKey.Public)
    case rsaPrivate(RSAKey.Private)

    /// RSA keys for reading old data. Apple apps often used 1024-bit keys;
    /// they load here (through swift-crypto's "unsafe" initializers) so old
    /// ciphertexts can be decrypted and migrated. Encrypting to a key under
    /// 2048 bits is refused.
    public enum RSAKey {
        public struct Public: @unchecked Sendable {  // an immutable BoringSSL key, only read
            let key: _RSA.Encryption.PublicKey
        }
        public struct Private: @unchecked Sendable {  // an immutable BoringSSL key, only read
            let key: _RSA.Encryption.PrivateKey
        }
    }

    public var description: String {
        switch self {
        case .ecPublic(let key): "\(key.algorithm) public key"
        case .ecPrivate(let key): "\(key.algorithm) private key (<redacted>)"
        case .rsaPublic(let key): "RSA-\(key.key.keySizeInBits) public key"
        case .rsaPrivate(let key): "RSA-\(key.key.keySizeInBits) private key (<redacted>)"
        }
    }

    /// A key from a key file: SecKeyCopyExternalRepresentation's bytes (EC
    /// `04‖X‖Y` or `04‖X‖Y‖D`, RSA PKCS#1 DER), those bytes in base64, or
    /// any PEM/DER form Coffer's key files read.
    public init(fileBytes: some Collection<UInt8>) throws {
        var bytes = Array(fileBytes)
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if !text.contains("-----BEGIN"), !text.isEmpty,
            let decoded = Data(base64Encoded: text, options: .ignoreUnknownCharacters),
            !decoded.isEmpty, text.allSatisfy({ $0.isLetter || $0.isNumber || "+/=\n\r ".contains($0) })
        {
            bytes = Array(decoded)
        }
        if let key = try? KeyFiles.privateKey(bytes) {
            switch key {
            case .p256, .p384, .p521:
                self = .ecPrivate(key)
                return
            case .rsa(let rsa):
                self = .rsaPrivate(
                    RSAKey.Private(
                        key: try Self.rsa {
                            try _RSA.Encryption.PrivateKey(unsafeDERRepresentation: rsa.derRepresentation)
                        }
                    ))
                return
            default:
                throw CofferError(
                    .invalidArgument, "SecKey encryption takes EC (P-256/384/521) or RSA keys, not \(key.algorithm)")
            }
        }
        if let key = try? KeyFiles.publicKey(bytes) {
            switch key {
            case .p256, .p384, .p521:
                self = .ecPublic(key)
                return
            case .rsa(let rsa):
                self = .rsaPublic(
                    RSAKey.Public(
                        key: try Self.rsa {
                            try _RSA.Encryption.PublicKey(unsafeDERRepresentation: rsa.derRepresentation)
                        }
                    ))
                return
            default:
                throw CofferError(
                    .invalidArgument, "SecKey encryption takes EC (P-256/384/521) or RSA keys, not \(key.algorithm)")
            }
        }
        if bytes.first == 0x04, bytes.count == 49 || bytes.count == 73 {
            throw CofferError(
                .unsupported,
                "a P-192 key (\(bytes.count == 49 ? "public" : "private")): swift-crypto has no P-192, so Coffer cannot use it"
            )
        }
        // RSA keys under 2048 bits, which Coffer's key files refuse.
        let pem = String(decoding: bytes, as: UTF8.self)
        if pem.contains("-----BEGIN") {
            if let key = try? _RSA.Encryption.PrivateKey(unsafePEMRepresentation: pem) {
                self = .rsaPrivate(RSAKey.Private(key: key))
                return
            }
            if let key = try? _RSA.Encryption.PublicKey(unsafePEMRepresentation: pem) {
                self = .rsaPublic(RSAKey.Public(key: key))
                return
            }
        } else {
            if let key = try? _RSA.Encryption.PrivateKey(unsafeDERRepresentation: bytes) {
                self = .rsaPrivate(RSAKey.Private(key: key))
                return
            }
            if let key = try? _RSA.Encryption.PublicKey(unsafeDERRepresentation: bytes) {
                self = .rsaPublic(RSAKey.Public(key: key))
                return
            }
        }
        throw CofferError(
            .malformed,
            "not a SecKey key: expected an external representation (EC 04 ‖ X ‖ Y [‖ D], RSA PKCS#1 DER), its base64, or a PEM/DER key file"
        )
    }

    /// An RSA key swift-crypto makes from one Coffer's key files read; its
    /// refusal (a size it does not take: the fuzzer found a 4,101-bit
    /// modulus) said as Coffer's error, not swift-crypto's.
    static func rsa<Key>(_ make: () throws -> Key) throws -> Key {
        do { return try make() } catch {
            throw CofferError(.unsupported, "an RSA key swift-crypto's RSA does not take (\(error))")
        }
    }
}
