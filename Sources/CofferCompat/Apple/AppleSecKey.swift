import Coffer
import Crypto
import CryptoExtras
import Foundation

/// SecKeyCreateEncryptedData / SecKeyCreateDecryptedData, byte for byte,
/// for ECIES (kSecKeyAlgorithmECIESEncryption…AESGCM) and RSA-OAEP + AES-GCM
/// (kSecKeyAlgorithmRSAEncryptionOAEPSHA…AESGCM).
///
/// ECIES: an ephemeral key on the recipient's curve; Z = the ECDH
/// x-coordinate; X9.63 with the named hash, shared info = the ephemeral
/// public key `04‖X‖Y`, gives the AES key (16 bytes on curves up to 256
/// bits, 32 above) and, for VariableIV, 16 more bytes for the IV; the
/// legacy variants use 16 zero bytes. AES-GCM with that 16-byte IV, no AAD.
/// Output: ephemeral public key ‖ ciphertext ‖ 16-byte tag.
///
/// RSA: a random AES key (16 bytes below 4096-bit moduli, 32 from 4096)
/// wrapped with OAEP, then AES-GCM with a 16-byte zero IV and the
/// recipient's PKCS#1 RSAPublicKey DER as AAD. Output: wrapped key ‖
/// ciphertext ‖ tag. Only OAEP with SHA-1 and SHA-256 is available
/// (swift-crypto's OAEP offers no other hash).
///
/// The IVs are fixed by Apple's construction and safe there: every message
/// has a fresh ephemeral or session key. Callers never supply one.
public enum AppleSecKey {
    static let tagSize = 16

    public static func encrypt(_ plaintext: some DataProtocol, to key: AppleKey, algorithm: AppleAlgorithm) throws
        -> Data
    {
        switch (algorithm.kind, key) {
        case let (.ecies(_, variableIV, hash), .ecPublic(publicKey)):
            return try eciesEncrypt(Data(plaintext), to: publicKey, variableIV: variableIV, hash: hash)
        case let (.ecies(_, variableIV, hash), .ecPrivate(privateKey)):
            return try eciesEncrypt(Data(plaintext), to: privateKey.publicKey, variableIV: variableIV, hash: hash)
        case let (.rsaOAEPAESGCM(hash), .rsaPublic(publicKey)):
            return try rsaEncrypt(Data(plaintext), to: publicKey.key, hash: hash)
        case let (.rsaOAEPAESGCM(hash), .rsaPrivate(privateKey)):
            return try rsaEncrypt(Data(plaintext), to: privateKey.key.publicKey, hash: hash)
        case (.ecdhKeyExchange, _):
            throw CofferError(.invalidArgument, "\(algorithm) is a key exchange, not an encryption algorithm")
        default:
            throw CofferError(.invalidArgument, "\(algorithm) needs \(algorithm.keyKind) key, not this \(key)")
        }
    }

    /// What `SecKeyCreateEncryptedData` made with `algorithm`, opened with the private `key`
    /// (ECIES's tag or RSA-OAEP's padding checked first).
    ///
    /// ```swift
    /// let key = try AppleKey(fileBytes: try Data(contentsOf: exportedKeyFile))  // SecKeyCopyExternalRepresentation's bytes
    /// let plaintext = try AppleSecKey.decrypt(
    ///     ciphertext, with: key, algorithm: .ecies(cofactor: true, variableIV: true, hash: .sha256))
    /// ```
    public static func decrypt(_ ciphertext: some DataProtocol, with key: AppleKey, algorithm: AppleAlgorithm) throws
        -> Data
    {
        switch (algorithm.kind, key) {
        case let (.ecies(_, variableIV, hash), .ecPrivate(privateKey)):
            return try eciesDecrypt(Data(ciphertext), with: privateKey, variableIV: variableIV, hash: hash)
        case let (.rsaOAEPAESGCM(hash), .rsaPrivate(privateKey)):
            return try rsaDecrypt(Data(ciphertext), with: privateKey.key, hash: hash)
        case (.ecdhKeyExchange, _):
            throw CofferError(.invalidArgument, "\(algorithm) is a key exchange, not an encryption algorithm")
        default:
            throw CofferError(
                .invalidArgument, "decrypting with \(algorithm) needs \(algorithm.keyKind) private key, not this \(key)"
            )
        }
    }

    /// SecKeyCopyKeyExchangeResult: ECDH, then X9.63 with the named hash to
    /// `size` bytes over `sharedInfo`; without a hash, the raw x-coordinate.
    public static func keyExchange(
        privateKey: AppleKey, publicKey: AppleKey, algorithm: AppleAlgorithm,
        size: Int, sharedInfo: [UInt8] = []
    ) throws -> [UInt8] {
        guard case let .ecdhKeyExchange(_, hash) = algorithm.kind else {
            throw CofferError(.invalidArgument, "\(algorithm) is not a key exchange algorithm")
        }
        guard case let .ecPrivate(mine) = privateKey else {
            throw CofferError(.invalidArgument, "the key exchange needs an EC private key, not \(privateKey)")
        }
        let theirs: AsymmetricPublicKey
        switch publicKey {
        case .ecPublic(let key): theirs = key
        case .ecPrivate(let key): theirs = key.publicKey
        default: throw CofferError(.invalidArgument, "the key exchange needs an EC public key, not \(publicKey)")
        }
        let secret = try KeyAgreement.insecureRawSharedSecret(privateKey: mine, peer: theirs)
        guard let hash else { return secret }
        guard (1...KeyAgreement.maximumSize).contains(size) else {
            throw CofferError(.invalidArgument, "the requested size must be 1 to \(KeyAgreement.maximumSize) bytes")
        }
        // SHA-1/256/384/512 through Coffer's agreement (swift-crypto's X9.63);
        // SHA-224 through Coffer's own SHA-224.
        let kdf: KeyAgreement.KDF? =
            switch hash {
            case .sha1: .x963SHA1
            case .sha256: .x963SHA256
            case .sha384: .x963SHA384
            case .sha512: .x963SHA512
            case .sha224: nil
            }
        if let kdf {
            return try KeyAgreement.agree(privateKey: mine, peer: theirs, kdf: kdf, size: size, sharedInfo: sharedInfo)
                .withUnsafeBytes { Array($0) }
        }
        return X963.derive(hash, secret: secret, sharedInfo: sharedInfo, size: size)
    }

    // MARK: ECIES

    struct Curve {
        let elementSize: Int
        let keySize: Int
    }

    static func curve(of key: AsymmetricPublicKey) throws -> Curve {
        switch key {
        case .p256: Curve(elementSize: 65, keySize: 16)
        case .p384: Curve(elementSize: 97, keySize: 32)
        case .p521: Curve(elementSize: 133, keySize: 32)
        default: throw CofferError(.invalidArgument, "ECIES needs a P-256, P-384 or P-521 key, not \(key.algorithm)")
        }
    }

    static func gcmKeyAndIV(
        _ hash: AppleAlgorithm.Hash, secret: [UInt8], ephemeral: [UInt8], keySize: Int, variableIV: Bool
    ) throws -> (SymmetricKey, AES.GCM.Nonce) {
        let derived = X963.derive(hash, secret: secret, sharedInfo: ephemeral, size: keySize + (variableIV ? 16 : 0))
        let iv = variableIV ? Array(derived.suffix(16)) : [UInt8](repeating: 0, count: 16)
        return (SymmetricKey(data: derived.prefix(keySize)), try AES.GCM.Nonce(data: iv))
    }

    static func ephemeral(for key: AsymmetricPublicKey) throws -> (AsymmetricPrivateKey, [UInt8]) {
        let ephemeral: AsymmetricPrivateKey =
            switch key {
            case .p256: .p256(P256.Signing.PrivateKey())
            case .p384: .p384(P384.Signing.PrivateKey())
            default: .p521(P521.Signing.PrivateKey())
            }
        return (ephemeral, try KeyFiles.encode(ephemeral.publicKey, as: .apple))
    }

    static func eciesEncrypt(
        _ plaintext: Data, to key: AsymmetricPublicKey, variableIV: Bool, hash: AppleAlgorithm.Hash
    ) throws -> Data {
        let curve = try curve(of: key)
        let (ephemeralKey, ephemeralPublic) = try ephemeral(for: key)
        let secret = try KeyAgreement.insecureRawSharedSecret(privateKey: ephemeralKey, peer: key)
        let (gcmKey, iv) = try gcmKeyAndIV(
            hash, secret: secret, ephemeral: ephemeralPublic, keySize: curve.keySize, variableIV: variableIV)
        let box = try AES.GCM.seal(plaintext, using: gcmKey, nonce: iv)
        return Data(ephemeralPublic) + box.ciphertext + box.tag
    }

    static func eciesDecrypt(
        _ ciphertext: Data, with key: AsymmetricPrivateKey, variableIV: Bool, hash: AppleAlgorithm.Hash
    ) throws -> Data {
        let curve = try curve(of: key.publicKey)
        guard ciphertext.count >= curve.elementSize + tagSize else {
            throw CofferError(
                .malformed,
                "an ECIES ciphertext for \(key.algorithm) is at least \(curve.elementSize + tagSize) bytes (ephemeral key and tag), not \(ciphertext.count)"
            )
        }
        let bytes = Array(ciphertext)
        let ephemeralPublic = Array(bytes.prefix(curve.elementSize))
        guard ephemeralPublic.first == 0x04, let peer = try? KeyFiles.publicKey(ephemeralPublic),
            peer.algorithm == key.algorithm
        else {
            throw CofferError(.malformed, "the ECIES ephemeral key is not an uncompressed point on \(key.algorithm)")
        }
        let secret = try KeyAgreement.insecureRawSharedSecret(privateKey: key, peer: peer)
        let (gcmKey, iv) = try gcmKeyAndIV(
            hash, secret: secret, ephemeral: ephemeralPublic, keySize: curve.keySize, variableIV: variableIV)
        let body = bytes[curve.elementSize...]
        do {
            let box = try AES.GCM.SealedBox(nonce: iv, ciphertext: body.dropLast(tagSize), tag: body.suffix(tagSize))
            return try AES.GCM.open(box, using: gcmKey)
        } catch {
            throw CofferError(
                .payloadAuthenticationFailed,
                "the ECIES ciphertext does not authenticate: wrong key, wrong algorithm, or damaged data")
        }
    }

    // MARK: RSA-OAEP + AES-GCM

    static func padding(_ hash: AppleAlgorithm.Hash) throws -> _RSA.Encryption.Padding {
        switch hash {
        case .sha1: return .PKCS1_OAEP
        case .sha256: return .PKCS1_OAEP_SHA256
        default:
            throw CofferError(
                .unsupported,
                "rsaEncryptionOAEP\(hash.rawValue)AESGCM needs RSA-OAEP with \(hash.rawValue), which swift-crypto does not offer (only SHA-1 and SHA-256)"
            )
        }
    }

    static func sessionKeySize(modulusBits: Int) -> Int { modulusBits >= 4096 ? 32 : 16 }

    static func rsaEncrypt(_ plaintext: Data, to key: _RSA.Encryption.PublicKey, hash: AppleAlgorithm.Hash) throws
        -> Data
    {
        let padding = try padding(hash)
        guard key.keySizeInBits >= 2048 else {
            throw CofferError(
                .unsupported,
                "Coffer does not encrypt to RSA keys under 2048 bits (this one has \(key.keySizeInBits)); it only decrypts what they protected"
            )
        }
        let sessionKey = SymmetricKey(
            size: SymmetricKeySize(bitCount: 8 * sessionKeySize(modulusBits: key.keySizeInBits)))
        let wrapped = try sessionKey.withUnsafeBytes { try key.encrypt(Data($0), padding: padding) }
        let box = try AES.GCM.seal(
            plaintext, using: sessionKey, nonce: try AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 16)),
            authenticating: key.pkcs1DERRepresentation)
        return wrapped + box.ciphertext + box.tag
    }

    static func rsaDecrypt(_ ciphertext: Data, with key: _RSA.Encryption.PrivateKey, hash: AppleAlgorithm.Hash) throws
        -> Data
    {
        let padding = try padding(hash)
        let k = (key.keySizeInBits + 7) / 8
        guard ciphertext.count >= k + tagSize else {
            throw CofferError(
                .malformed,
                "an RSA-AES-GCM ciphertext for a \(key.keySizeInBits)-bit key is at least \(k + tagSize) bytes, not \(ciphertext.count)"
            )
        }
        let bytes = Array(ciphertext)
        let failure = CofferError(
            .payloadAuthenticationFailed,
            "the RSA-AES-GCM ciphertext does not authenticate: wrong key, wrong algorithm, or damaged data")
        guard let sessionKey = try? key.decrypt(bytes.prefix(k), padding: padding),
            sessionKey.count == sessionKeySize(modulusBits: key.keySizeInBits)
        else { throw failure }
        let body = bytes[k...]
        do {
            let box = try AES.GCM.SealedBox(
                nonce: try AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 16)),
                ciphertext: body.dropLast(tagSize), tag: body.suffix(tagSize))
            return try AES.GCM.open(
                box, using: SymmetricKey(data: sessionKey), authenticating: key.publicKey.pkcs1DERRepresentation)
        } catch {
            throw failure
        }
    }
}

extension AppleAlgorithm {
    var keyKind: String {
        switch kind {
        case .ecies: "an EC (P-256/384/521)"
        case .rsaOAEPAESGCM: "an RSA"
        case .ecdhKeyExchange: "an EC"
        }
    }
}
