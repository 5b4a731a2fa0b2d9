import Crypto
import CryptoExtras
import Foundation
import SwiftASN1

/// Reading and writing key files. The format is detected from the bytes:
/// PEM or DER PKCS#8 / SPKI, PKCS#1 (RSA), SEC 1 (EC), OpenSSH, and Apple's
/// SecKey external representations (EC `04‖X‖Y` and `04‖X‖Y‖D`, RSA
/// PKCS#1 DER). Errors say what was expected; they never quote the key.
public enum KeyFiles {
    /// The formats `encode` can write.
    public enum Format: String, CaseIterable, Sendable {
        case pkcs8, spki, pkcs1, sec1, openssh, apple
    }

    static let privateFormats =
        "PEM or DER PKCS#8 (\"PRIVATE KEY\"), PKCS#1 (\"RSA PRIVATE KEY\"), SEC 1 (\"EC PRIVATE KEY\"), OpenSSH (\"OPENSSH PRIVATE KEY\"), or Apple's external representation (04 ‖ X ‖ Y ‖ D)"
    static let publicFormats =
        "PEM or DER SPKI (\"PUBLIC KEY\"), PKCS#1 (\"RSA PUBLIC KEY\"), an OpenSSH public key line, or Apple's external representation (04 ‖ X ‖ Y, or RSA PKCS#1 DER)"

    // MARK: reading

    /// A private key from a key file's bytes.
    public static func privateKey(_ bytes: some Collection<UInt8>) throws -> AsymmetricPrivateKey {
        let bytes = Array(bytes)
        if PEM.looksLikePEM(bytes) {
            let block = try PEM.decode(String(decoding: bytes, as: UTF8.self))
            switch block.label {
            case OpenSSH.privateKeyLabel: return try OpenSSH.privateKey(bytes: block.bytes)
            case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
                if let key = privateKey(der: block.bytes) { return key }
                throw CofferError(
                    .malformed,
                    "the \"\(block.label)\" PEM block does not hold a private key Coffer reads (Ed25519, X25519, P-256/384/521, RSA ≥ 2048 bits, ML-DSA-65)"
                )
            case "ENCRYPTED PRIVATE KEY":
                throw CofferError(
                    .unsupported,
                    "the private key is encrypted (PKCS#8 \"ENCRYPTED PRIVATE KEY\"); decrypt a copy first: openssl pkey -in KEY -out PLAIN"
                )
            case "PUBLIC KEY", "RSA PUBLIC KEY":
                throw CofferError(
                    .invalidArgument,
                    "this is a public key (\"\(block.label)\"); a private key is needed: \(privateFormats)")
            default:
                throw CofferError(
                    .malformed, "a PEM \"\(block.label)\" block is not a private key; expected \(privateFormats)")
            }
        }
        if bytes.starts(with: Array("ssh-".utf8)) || bytes.starts(with: Array("ecdsa-".utf8)) {
            throw CofferError(
                .invalidArgument, "this is an OpenSSH public key; a private key is needed: \(privateFormats)")
        }
        if let key = privateKey(der: bytes) { return key }
        if bytes.first == 0x04, let key = appleECPrivateKey(bytes) { return key }
        throw CofferError(.malformed, "not a private key in a format Coffer reads; expected \(privateFormats)")
    }

    static func privateKey(der: [UInt8]) -> AsymmetricPrivateKey? {
        guard der.first == 0x30 else { return nil }
        // swift-crypto's Curve25519 DER readers do not tell Ed25519 from
        // X25519 by the OID, so the OID decides here.
        if let outer = KeyStructures.pkcs8(der) {
            switch outer.algorithm {
            case KeyStructures.mldsa65:
                return KeyStructures.mldsa65Seed(outer).flatMap {
                    try? MLDSA65.PrivateKey(seedRepresentation: $0, publicKey: nil)
                }.map { .mldsa65($0) }
            case KeyStructures.ed25519:
                return (try? Curve25519.Signing.PrivateKey(derRepresentation: der)).map { .ed25519($0) }
            case KeyStructures.x25519:
                return (try? Curve25519.KeyAgreement.PrivateKey(derRepresentation: der)).map { .x25519($0) }
            case let oid where KeyStructures.isRFC8410(oid):
                return nil
            default: break
            }
        }
        if let key = try? P256.Signing.PrivateKey(derRepresentation: der) { return .p256(key) }
        if let key = try? P384.Signing.PrivateKey(derRepresentation: der) { return .p384(key) }
        if let key = try? P521.Signing.PrivateKey(derRepresentation: der) { return .p521(key) }
        if let key = try? _RSA.Signing.PrivateKey(derRepresentation: der) { return .rsa(key) }
        return nil
    }

    static func appleECPrivateKey(_ bytes: [UInt8]) -> AsymmetricPrivateKey? {
        switch bytes.count {
        case 97: (try? P256.Signing.PrivateKey(x963Representation: bytes)).map { .p256($0) }
        case 145: (try? P384.Signing.PrivateKey(x963Representation: bytes)).map { .p384($0) }
        case 199: (try? P521.Signing.PrivateKey(x963Representation: bytes)).map { .p521($0) }
        default: nil
        }
    }

    /// A public key from a key file's bytes. A private key file is accepted
    /// too, and gives its public key.
    public static func publicKey(_ bytes: some Collection<UInt8>) throws -> AsymmetricPublicKey {
        let bytes = Array(bytes)
        if PEM.looksLikePEM(bytes) {
            let block = try PEM.decode(String(decoding: bytes, as: UTF8.self))
            switch block.label {
            case "PUBLIC KEY", "RSA PUBLIC KEY":
                if let key = publicKey(der: block.bytes) { return key }
                throw CofferError(
                    .malformed,
                    "the \"\(block.label)\" PEM block does not hold a public key Coffer reads (Ed25519, X25519, P-256/384/521, RSA ≥ 2048 bits, ML-DSA-65)"
                )
            default:
                return try privateKey(bytes).publicKey
            }
        }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("ssh-") || text.hasPrefix("ecdsa-sha2-") {
            return try OpenSSH.parsePublicKeyLine(text).key
        }
        if let key = publicKey(der: bytes) { return key }
        if bytes.first == 0x04 {
            // 97 bytes is a P-384 point or a P-256 private key: a P-256
            // private key is a point on P-384 with negligible probability.
            switch bytes.count {
            case 65: if let key = try? P256.Signing.PublicKey(x963Representation: bytes) { return .p256(key) }
            case 97: if let key = try? P384.Signing.PublicKey(x963Representation: bytes) { return .p384(key) }
            case 133: if let key = try? P521.Signing.PublicKey(x963Representation: bytes) { return .p521(key) }
            default: break
            }
            if let key = appleECPrivateKey(bytes) { return key.publicKey }
            throw CofferError(
                .malformed,
                "the \(bytes.count) bytes starting 04 are not a point on P-256 (65), P-384 (97) or P-521 (133)")
        }
        if let key = privateKey(der: bytes) { return key.publicKey }
        throw CofferError(.malformed, "not a public key in a format Coffer reads; expected \(publicFormats)")
    }

    static func publicKey(der: [UInt8]) -> AsymmetricPublicKey? {
        guard der.first == 0x30 else { return nil }
        if let outer = KeyStructures.spki(der) {
            switch outer.algorithm {
            case KeyStructures.mldsa65:
                return (try? MLDSA65.PublicKey(rawRepresentation: outer.key)).map { .mldsa65($0) }
            case KeyStructures.ed25519:
                return (try? Curve25519.Signing.PublicKey(derRepresentation: der)).map { .ed25519($0) }
            case KeyStructures.x25519:
                return (try? Curve25519.KeyAgreement.PublicKey(derRepresentation: der)).map { .x25519($0) }
            case let oid where KeyStructures.isRFC8410(oid):
                return nil
            default: break
            }
        }
        if let key = try? P256.Signing.PublicKey(derRepresentation: der) { return .p256(key) }
        if let key = try? P384.Signing.PublicKey(derRepresentation: der) { return .p384(key) }
        if let key = try? P521.Signing.PublicKey(derRepresentation: der) { return .p521(key) }
        if let key = try? _RSA.Signing.PublicKey(derRepresentation: der) { return .rsa(key) }
        return nil
    }

    // MARK: writing

    /// A private key in `format`; PEM unless `der` (which OpenSSH has not).
    public static func encode(_ key: AsymmetricPrivateKey, as format: Format, der: Bool = false) throws -> [UInt8] {
        func out(_ label: String, _ bytes: some Collection<UInt8>) -> [UInt8] {
            der ? Array(bytes) : Array(PEM.encode(label: label, bytes).utf8)
        }
        switch (format, key) {
        case (.pkcs8, .ed25519(let key)): return out("PRIVATE KEY", key.derRepresentation)
        case (.pkcs8, .x25519(let key)): return out("PRIVATE KEY", key.derRepresentation)
        case (.pkcs8, .p256(let key)):
            return der ? Array(key.derRepresentation) : Array(key.pemRepresentation.utf8) + [0x0a]
        case (.pkcs8, .p384(let key)):
            return der ? Array(key.derRepresentation) : Array(key.pemRepresentation.utf8) + [0x0a]
        case (.pkcs8, .p521(let key)):
            return der ? Array(key.derRepresentation) : Array(key.pemRepresentation.utf8) + [0x0a]
        case (.pkcs8, .rsa(let key)): return out("PRIVATE KEY", key.pkcs8DERRepresentation)
        case (.pkcs8, .mldsa65(let key)):
            return out("PRIVATE KEY", try KeyStructures.mldsa65PKCS8(seed: key.seedRepresentation))
        case (.pkcs1, .rsa(let key)): return out("RSA PRIVATE KEY", key.derRepresentation)
        case (.apple, .rsa(let key)): return Array(key.derRepresentation)
        case (.sec1, .p256(let key)):
            return out(
                "EC PRIVATE KEY",
                try KeyStructures.sec1(
                    scalar: key.rawRepresentation, curve: .NamedCurves.secp256r1,
                    point: key.publicKey.x963Representation))
        case (.sec1, .p384(let key)):
            return out(
                "EC PRIVATE KEY",
                try KeyStructures.sec1(
                    scalar: key.rawRepresentation, curve: .NamedCurves.secp384r1,
                    point: key.publicKey.x963Representation))
        case (.sec1, .p521(let key)):
            return out(
                "EC PRIVATE KEY",
                try KeyStructures.sec1(
                    scalar: key.rawRepresentation, curve: .NamedCurves.secp521r1,
                    point: key.publicKey.x963Representation))
        case (.apple, .p256(let key)): return Array(key.x963Representation)
        case (.apple, .p384(let key)): return Array(key.x963Representation)
        case (.apple, .p521(let key)): return Array(key.x963Representation)
        case (.openssh, _):
            guard !der else { throw CofferError(.invalidArgument, "OpenSSH private keys are PEM only") }
            return Array(try OpenSSH.privateKeyPEM(key).utf8)
        default:
            throw CofferError(
                .invalidArgument, "this \(key.algorithm) private key cannot be written as \(format.rawValue)")
        }
    }

    /// A public key in `format`.
    public static func encode(_ key: AsymmetricPublicKey, as format: Format, der: Bool = false) throws -> [UInt8] {
        func out(_ label: String, _ bytes: some Collection<UInt8>) -> [UInt8] {
            der ? Array(bytes) : Array(PEM.encode(label: label, bytes).utf8)
        }
        switch (format, key) {
        case (.spki, .ed25519(let key)): return out("PUBLIC KEY", key.derRepresentation)
        case (.spki, .x25519(let key)): return out("PUBLIC KEY", key.derRepresentation)
        case (.spki, .p256(let key)): return out("PUBLIC KEY", key.derRepresentation)
        case (.spki, .p384(let key)): return out("PUBLIC KEY", key.derRepresentation)
        case (.spki, .p521(let key)): return out("PUBLIC KEY", key.derRepresentation)
        case (.spki, .rsa(let key)): return out("PUBLIC KEY", key.derRepresentation)
        case (.spki, .mldsa65(let key)):
            return out("PUBLIC KEY", try KeyStructures.mldsa65SPKI(publicKey: key.rawRepresentation))
        case (.pkcs1, .rsa(let key)): return out("RSA PUBLIC KEY", key.pkcs1DERRepresentation)
        case (.apple, .rsa(let key)): return Array(key.pkcs1DERRepresentation)
        case (.apple, .p256(let key)): return Array(key.x963Representation)
        case (.apple, .p384(let key)): return Array(key.x963Representation)
        case (.apple, .p521(let key)): return Array(key.x963Representation)
        case (.openssh, _):
            guard !der else { throw CofferError(.invalidArgument, "OpenSSH public keys are text lines only") }
            return Array((try OpenSSH.publicKeyLine(key) + "\n").utf8)
        default:
            throw CofferError(
                .invalidArgument, "this \(key.algorithm) public key cannot be written as \(format.rawValue)")
        }
    }
}
