import Crypto
import CryptoExtras
import Foundation

/// Signatures with the key's natural scheme: Ed25519 (RFC 8032), ECDSA
/// with SHA-256 / SHA-384 / SHA-512 on P-256 / P-384 / P-521 (what
/// SecKey's ecdsaSignatureMessageX962SHA* and `openssl dgst` use), RSA-PSS
/// with SHA-256 and a 32-byte salt, and ML-DSA-65 (FIPS 204, empty
/// context). RSA PKCS#1 v1.5 is accepted only for verifying, and only when
/// asked for by name.
public enum Signatures {
    /// ECDSA signature encodings: DER (X9.62 Ecdsa-Sig-Value, what SecKey
    /// and OpenSSL produce) or raw r ‖ s (JOSE, CryptoKit's rawRepresentation).
    public enum ECDSAFormat: String, CaseIterable, Sendable { case der, raw }

    public enum RSAPadding: String, CaseIterable, Sendable {
        case pss
        /// Verification only: PKCS#1 v1.5 signatures are deterministic and
        /// have a history of parser forgeries. Named so no one picks it by accident.
        case pkcs1v15Insecure = "pkcs1v15-insecure"
    }

    public static func sign(
        _ message: some DataProtocol, with key: AsymmetricPrivateKey, ecdsaFormat: ECDSAFormat = .der
    ) throws -> Data {
        switch key {
        case .ed25519(let key):
            return try key.signature(for: message)
        case .p256(let key):
            let signature = try key.signature(for: SHA256.hash(data: message))
            return ecdsaFormat == .der ? signature.derRepresentation : signature.rawRepresentation
        case .p384(let key):
            let signature = try key.signature(for: SHA384.hash(data: message))
            return ecdsaFormat == .der ? signature.derRepresentation : signature.rawRepresentation
        case .p521(let key):
            let signature = try key.signature(for: SHA512.hash(data: message))
            return ecdsaFormat == .der ? signature.derRepresentation : signature.rawRepresentation
        case .rsa(let key):
            return try key.signature(for: SHA256.hash(data: message), padding: .PSS).rawRepresentation
        case .mldsa65(let key):
            return try key.signature(for: message)
        case .x25519:
            throw CofferError(.invalidArgument, "an X25519 key is for key agreement, not signatures")
        }
    }

    /// True only for a valid signature. Throws for a key that cannot
    /// verify (X25519) or a padding the key does not take.
    public static func isValid(
        _ signature: some DataProtocol, for message: some DataProtocol, with key: AsymmetricPublicKey,
        rsaPadding: RSAPadding = .pss
    ) throws -> Bool {
        let signature = Data(signature)
        if rsaPadding == .pkcs1v15Insecure {
            guard case .rsa = key else {
                throw CofferError(
                    .invalidArgument, "PKCS#1 v1.5 padding applies to RSA keys only, not \(key.algorithm)")
            }
        }
        switch key {
        case .ed25519(let key):
            return key.isValidSignature(signature, for: message)
        case .p256(let key):
            return ecdsaSignatures(
                signature, size: 32, der: P256.Signing.ECDSASignature.init(derRepresentation:),
                raw: P256.Signing.ECDSASignature.init(rawRepresentation:)
            )
            .contains { key.isValidSignature($0, for: SHA256.hash(data: message)) }
        case .p384(let key):
            return ecdsaSignatures(
                signature, size: 48, der: P384.Signing.ECDSASignature.init(derRepresentation:),
                raw: P384.Signing.ECDSASignature.init(rawRepresentation:)
            )
            .contains { key.isValidSignature($0, for: SHA384.hash(data: message)) }
        case .p521(let key):
            return ecdsaSignatures(
                signature, size: 66, der: P521.Signing.ECDSASignature.init(derRepresentation:),
                raw: P521.Signing.ECDSASignature.init(rawRepresentation:)
            )
            .contains { key.isValidSignature($0, for: SHA512.hash(data: message)) }
        case .rsa(let key):
            guard signature.count == (key.keySizeInBits + 7) / 8 else { return false }
            let padding: _RSA.Signing.Padding = rsaPadding == .pss ? .PSS : .insecurePKCS1v1_5
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: message),
                padding: padding)
        case .mldsa65(let key):
            return key.isValidSignature(signature, for: message)
        case .x25519:
            throw CofferError(.invalidArgument, "an X25519 key is for key agreement, not signatures")
        }
    }

    /// The readings of an ECDSA signature: raw r ‖ s when it is exactly
    /// 2 × size bytes, DER otherwise (both are tried at that length).
    private static func ecdsaSignatures<S>(_ bytes: Data, size: Int, der: (Data) throws -> S, raw: (Data) throws -> S)
        -> [S]
    {
        var readings: [S] = []
        if bytes.count == 2 * size, let parsed = try? raw(bytes) { readings.append(parsed) }
        if bytes.first == 0x30, let parsed = try? der(bytes) { readings.append(parsed) }
        return readings
    }
}
