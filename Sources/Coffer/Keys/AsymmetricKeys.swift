import Crypto
import CryptoExtras
import Foundation

/// A public key of any kind Coffer reads from a key file.
public enum AsymmetricPublicKey: Sendable {
    case ed25519(Curve25519.Signing.PublicKey)
    case x25519(Curve25519.KeyAgreement.PublicKey)
    case p256(P256.Signing.PublicKey)
    case p384(P384.Signing.PublicKey)
    case p521(P521.Signing.PublicKey)
    case rsa(_RSA.Signing.PublicKey)
    case mldsa65(MLDSA65.PublicKey)

    /// The algorithm's name as the CLI spells it.
    public var algorithm: String {
        switch self {
        case .ed25519: "Ed25519"
        case .x25519: "X25519"
        case .p256: "P-256"
        case .p384: "P-384"
        case .p521: "P-521"
        case .rsa(let key): "RSA-\(key.keySizeInBits)"
        case .mldsa65: "ML-DSA-65"
        }
    }
}

/// A private key of any kind Coffer reads from a key file. Its description
/// names the algorithm only.
public enum AsymmetricPrivateKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    case ed25519(Curve25519.Signing.PrivateKey)
    case x25519(Curve25519.KeyAgreement.PrivateKey)
    case p256(P256.Signing.PrivateKey)
    case p384(P384.Signing.PrivateKey)
    case p521(P521.Signing.PrivateKey)
    case rsa(_RSA.Signing.PrivateKey)
    case mldsa65(MLDSA65.PrivateKey)

    public var publicKey: AsymmetricPublicKey {
        switch self {
        case .ed25519(let key): .ed25519(key.publicKey)
        case .x25519(let key): .x25519(key.publicKey)
        case .p256(let key): .p256(key.publicKey)
        case .p384(let key): .p384(key.publicKey)
        case .p521(let key): .p521(key.publicKey)
        case .rsa(let key): .rsa(key.publicKey)
        case .mldsa65(let key): .mldsa65(key.publicKey)
        }
    }

    public var algorithm: String { publicKey.algorithm }
    public var description: String { "\(algorithm) private key (<redacted>)" }
    public var debugDescription: String { description }
}
