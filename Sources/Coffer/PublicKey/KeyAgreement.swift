import Crypto
import Foundation

/// ECDH on P-256, P-384, P-521 and X25519, with the shared secret always
/// passed through a KDF: ANSI X9.63 (as SecKeyCopyKeyExchangeResult does
/// with kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA256 and its
/// requestedSize / sharedInfo; the NIST curves have cofactor 1, so the
/// cofactor variant is plain ECDH) or HKDF. The raw secret is only
/// available through `insecureRawSharedSecret`.
public enum KeyAgreement {
    /// The KDF over the ECDH secret. A struct with static members, so that
    /// a later release can add one without breaking switches; parsed and
    /// printed by its raw value (`x963-sha256`, `hkdf-sha256`, …).
    public struct KDF: RawRepresentable, Hashable, Sendable, CaseIterable, CustomStringConvertible, OpenNameSet {
        package enum Kind: String, CaseIterable, Sendable {
            case x963SHA256 = "x963-sha256"
            case x963SHA1 = "x963-sha1"
            case x963SHA384 = "x963-sha384"
            case x963SHA512 = "x963-sha512"
            case hkdfSHA256 = "hkdf-sha256"
        }
        package let kind: Kind
        package init(_ kind: Kind) { self.kind = kind }

        /// ANSI X9.63 with SHA-256 (Apple's ECDHKeyExchange…X963SHA256).
        public static let x963SHA256 = KDF(.x963SHA256)
        /// ANSI X9.63 with SHA-1, for peers that still use it.
        public static let x963SHA1 = KDF(.x963SHA1)
        public static let x963SHA384 = KDF(.x963SHA384)
        public static let x963SHA512 = KDF(.x963SHA512)
        /// HKDF-SHA-256 with an empty salt and `sharedInfo` as info.
        public static let hkdfSHA256 = KDF(.hkdfSHA256)
    }

    /// Most a KDF is asked for: X9.63 and HKDF-SHA-256 both allow far
    /// more, but no key needs it.
    public static let maximumSize = 8160

    /// A private key made ready for repeated agreements (the conversion to
    /// swift-crypto's key-agreement type happens once).
    public struct Party: Sendable {
        enum Key: Sendable {
            case p256(P256.KeyAgreement.PrivateKey)
            case p384(P384.KeyAgreement.PrivateKey)
            case p521(P521.KeyAgreement.PrivateKey)
            case x25519(Curve25519.KeyAgreement.PrivateKey)
        }
        let key: Key
        let algorithm: String

        public init(privateKey: AsymmetricPrivateKey) throws {
            algorithm = privateKey.algorithm
            switch privateKey {
            case .p256(let k): key = .p256(try P256.KeyAgreement.PrivateKey(rawRepresentation: k.rawRepresentation))
            case .p384(let k): key = .p384(try P384.KeyAgreement.PrivateKey(rawRepresentation: k.rawRepresentation))
            case .p521(let k): key = .p521(try P521.KeyAgreement.PrivateKey(rawRepresentation: k.rawRepresentation))
            case .x25519(let k): key = .x25519(k)
            default:
                throw CofferError(
                    .invalidArgument,
                    "key agreement needs a P-256, P-384, P-521 or X25519 private key, not \(privateKey.algorithm)")
            }
        }

        /// The derived key: `size` bytes from `kdf` over the ECDH secret,
        /// with `sharedInfo` (X9.63's SharedInfo, HKDF's info; HKDF's salt is empty).
        public func agree(
            with peer: Peer, kdf: KDF = .x963SHA256, size: Int = 32, sharedInfo: some DataProtocol = Data()
        ) throws -> SymmetricKey {
            guard (1...maximumSize).contains(size) else {
                throw CofferError(.invalidArgument, "the derived size must be 1 to \(maximumSize) bytes, not \(size)")
            }
            let secret = try sharedSecret(with: peer)
            return switch kdf.kind {
            case .x963SHA256:
                secret.x963DerivedSymmetricKey(using: SHA256.self, sharedInfo: sharedInfo, outputByteCount: size)
            case .x963SHA1:
                secret.x963DerivedSymmetricKey(using: Insecure.SHA1.self, sharedInfo: sharedInfo, outputByteCount: size)
            case .x963SHA384:
                secret.x963DerivedSymmetricKey(using: SHA384.self, sharedInfo: sharedInfo, outputByteCount: size)
            case .x963SHA512:
                secret.x963DerivedSymmetricKey(using: SHA512.self, sharedInfo: sharedInfo, outputByteCount: size)
            case .hkdfSHA256:
                secret.hkdfDerivedSymmetricKey(
                    using: SHA256.self, salt: Data(), sharedInfo: sharedInfo, outputByteCount: size)
            }
        }

        func sharedSecret(with peer: Peer) throws -> SharedSecret {
            do {
                switch (key, peer.key) {
                case (.p256(let key), .p256(let other)): return try key.sharedSecretFromKeyAgreement(with: other)
                case (.p384(let key), .p384(let other)): return try key.sharedSecretFromKeyAgreement(with: other)
                case (.p521(let key), .p521(let other)): return try key.sharedSecretFromKeyAgreement(with: other)
                case (.x25519(let key), .x25519(let other)):
                    let secret = try key.sharedSecretFromKeyAgreement(with: other)
                    guard !secret.withUnsafeBytes({ $0.allSatisfy { $0 == 0 } }) else {
                        throw CofferError(
                            .malformed, "the X25519 peer key is a low-order point (the shared secret is zero)")
                    }
                    return secret
                default:
                    throw CofferError(
                        .invalidArgument,
                        "the private key is \(algorithm) but the peer key is \(peer.algorithm); both must be on the same curve"
                    )
                }
            } catch let error as CofferError {
                throw error
            } catch {
                throw CofferError(.malformed, "key agreement failed: the peer key is not valid on its curve")
            }
        }
    }

    /// The other side's public key, made ready for agreements.
    public struct Peer: Sendable {
        enum Key: Sendable {
            case p256(P256.KeyAgreement.PublicKey)
            case p384(P384.KeyAgreement.PublicKey)
            case p521(P521.KeyAgreement.PublicKey)
            case x25519(Curve25519.KeyAgreement.PublicKey)
        }
        let key: Key
        let algorithm: String

        public init(publicKey: AsymmetricPublicKey) throws {
            algorithm = publicKey.algorithm
            switch publicKey {
            case .p256(let k): key = .p256(try P256.KeyAgreement.PublicKey(rawRepresentation: k.rawRepresentation))
            case .p384(let k): key = .p384(try P384.KeyAgreement.PublicKey(rawRepresentation: k.rawRepresentation))
            case .p521(let k): key = .p521(try P521.KeyAgreement.PublicKey(rawRepresentation: k.rawRepresentation))
            case .x25519(let k): key = .x25519(k)
            default:
                throw CofferError(
                    .invalidArgument,
                    "key agreement needs a P-256, P-384, P-521 or X25519 peer key, not \(publicKey.algorithm)")
            }
        }
    }

    /// The derived key: `size` bytes from `kdf` over the ECDH secret, with
    /// `sharedInfo` (X9.63's SharedInfo, HKDF's info; HKDF's salt is empty).
    public static func agree(
        privateKey: AsymmetricPrivateKey, peer: AsymmetricPublicKey, kdf: KDF = .x963SHA256,
        size: Int = 32, sharedInfo: some DataProtocol = Data()
    ) throws -> SymmetricKey {
        try Party(privateKey: privateKey).agree(
            with: try Peer(publicKey: peer), kdf: kdf, size: size, sharedInfo: sharedInfo)
    }

    /// The ECDH output itself (the x-coordinate, or X25519's u), which is
    /// not uniformly random and must not be used as a key directly. For
    /// interoperating with systems that apply their own KDF.
    public static func insecureRawSharedSecret(privateKey: AsymmetricPrivateKey, peer: AsymmetricPublicKey) throws
        -> [UInt8]
    {
        try Party(privateKey: privateKey).sharedSecret(with: try Peer(publicKey: peer)).withUnsafeBytes { Array($0) }
    }
}
