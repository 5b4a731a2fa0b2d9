#if canImport(Security)
import Coffer
import Crypto
import Foundation
import Security

// AppleKeychain, continued: keys that SecKey makes and uses inside the
// keychain (and, for P-256 with `secureEnclave`, inside the Secure Enclave).
extension AppleKeychain {
    // MARK: Keys made and used inside the keychain

    @discardableResult
    public func generateKey(_ type: KeychainKeyType, tag: String, label: String?) throws -> AsymmetricPublicKey? {
        guard SecItemLayout.isSecKey(type) else {
            // X25519 and symmetric keys: swift-crypto makes them, a generic password keeps them.
            let bytes: [UInt8]
            let publicKey: AsymmetricPublicKey?
            if type == .x25519 {
                let key = Curve25519.KeyAgreement.PrivateKey()
                bytes = try KeyFiles.encode(.x25519(key), as: .pkcs8, der: true)
                publicKey = .x25519(key.publicKey)
            } else {
                bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
                publicKey = nil
            }
            try add(.key(tag: tag, type: type, label: label), data: SecretBytes(bytes))
            return publicKey
        }
        if (try? core.records(.key(tag: tag, type: type)))?.isEmpty == false {
            throw KeychainError(.duplicateItem, "an item with the same tag and key type exists")
        }
        let (secType, bits) = SecItemLayout.secKeyType(type)
        var privateAttributes: [CFString: Any] = [
            kSecAttrIsPermanent: true,
            kSecAttrApplicationTag: Data(layout.stored(tag, group: nil).utf8),
        ]
        if let label { privateAttributes[kSecAttrLabel] = label }
        var attributes: [CFString: Any] = [
            kSecAttrKeyType: SecurityFrameworkItems.value(secType), kSecAttrKeySizeInBits: bits,
        ]
        if useDataProtectionKeychain { attributes[kSecUseDataProtectionKeychain] = true }
        if secureEnclave && type == .p256 {
            var error: Unmanaged<CFError>?
            guard
                let access = SecAccessControlCreateWithFlags(
                    nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .privateKeyUsage, &error)
            else {
                throw SecurityFrameworkItems.error(error, doing: "make the Secure Enclave access control")
            }
            attributes[kSecAttrTokenID] = kSecAttrTokenIDSecureEnclave
            privateAttributes[kSecAttrAccessControl] = access
        } else {
            privateAttributes[kSecAttrAccessible] = kSecAttrAccessibleWhenUnlocked
        }
        attributes[kSecPrivateKeyAttrs] = privateAttributes
        var error: Unmanaged<CFError>?
        guard let privateKey = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
            throw SecurityFrameworkItems.error(error, doing: "generate the \(type.rawValue) key")
        }
        return try SecurityFrameworkItems.publicKey(of: privateKey)
    }

    public func publicKey(tag: String, type: KeychainKeyType) throws -> AsymmetricPublicKey {
        guard SecItemLayout.isSecKey(type) else { return try exportPrivateKey(tag: tag, type: type).publicKey }
        return try SecurityFrameworkItems.publicKey(of: try secKey(.key(tag: tag, type: type)))
    }

    public func agree(
        tag: String, type: KeychainKeyType, peer: AsymmetricPublicKey, kdf: KeyAgreement.KDF = .x963SHA256,
        size: Int = 32, sharedInfo: [UInt8] = []
    ) throws -> SymmetricKey {
        guard type == .p256 else {
            guard type == .x25519 else {
                throw KeychainError(.invalidArgument, "key agreement needs a p256 or x25519 key, not \(type.rawValue)")
            }
            return try KeyAgreement.agree(
                privateKey: try exportPrivateKey(tag: tag, type: type), peer: peer, kdf: kdf, size: size,
                sharedInfo: sharedInfo)
        }
        guard case .p256(let peerKey) = peer else {
            throw KeychainError(.invalidArgument, "a P-256 key agrees with a P-256 peer, not \(peer.algorithm)")
        }
        let privateKey = try secKey(.key(tag: tag, type: .p256))
        var error: Unmanaged<CFError>?
        let peerAttributes: [CFString: Any] = [
            kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPublic,
        ]
        guard
            let peerSecKey = SecKeyCreateWithData(
                peerKey.x963Representation as CFData, peerAttributes as CFDictionary, &error)
        else {
            throw SecurityFrameworkItems.error(error, doing: "read the peer's key")
        }
        let algorithm: SecKeyAlgorithm
        switch kdf.kind {
        case .x963SHA1: algorithm = .ecdhKeyExchangeCofactorX963SHA1
        case .x963SHA256: algorithm = .ecdhKeyExchangeCofactorX963SHA256
        case .x963SHA384: algorithm = .ecdhKeyExchangeCofactorX963SHA384
        case .x963SHA512: algorithm = .ecdhKeyExchangeCofactorX963SHA512
        case .hkdfSHA256: algorithm = .ecdhKeyExchangeCofactor
        }
        let parameters: [CFString: Any] =
            kdf == .hkdfSHA256
            ? [:]
            : [
                SecKeyKeyExchangeParameter.requestedSize.rawValue: size,
                SecKeyKeyExchangeParameter.sharedInfo.rawValue: Data(sharedInfo),
            ]
        guard
            let result = SecKeyCopyKeyExchangeResult(
                privateKey, algorithm, peerSecKey, parameters as CFDictionary, &error) as Data?
        else {
            throw SecurityFrameworkItems.error(error, doing: "agree on a key")
        }
        guard kdf == .hkdfSHA256 else { return SymmetricKey(data: result) }
        // The cofactor ECDH secret of P-256 is the plain one; HKDF as KeyAgreement does it.
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: result), salt: Data(), info: Data(sharedInfo), outputByteCount: size)
    }

    public func rsaDecrypt(
        _ ciphertext: [UInt8], tag: String, type: KeychainKeyType = .rsa2048,
        hash: RSAEncryption.Hash = .sha256
    ) throws -> SecretBytes {
        try KeychainKeyType.requireRSA(type)
        let privateKey = try secKey(.key(tag: tag, type: type))
        let algorithm: SecKeyAlgorithm = hash == .sha256 ? .rsaEncryptionOAEPSHA256 : .rsaEncryptionOAEPSHA1
        var error: Unmanaged<CFError>?
        guard
            let plaintext = SecKeyCreateDecryptedData(
                privateKey, algorithm, Data(ciphertext) as CFData, &error) as Data?
        else {
            throw SecurityFrameworkItems.error(error, doing: "decrypt")
        }
        return SecretBytes(plaintext)
    }
}
#endif
