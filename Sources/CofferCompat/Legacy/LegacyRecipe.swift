import Coffer
import Crypto
import CryptoExtras
import Foundation

/// The CommonCrypto "data at rest" recipe many apps copied: a dictionary
/// `{EncryptionData, EncryptionIV, EncryptionSalt}` stored as a property
/// list (binary or XML) or as JSON with base64 strings. The key is
/// PBKDF2-HMAC-SHA512, 14,271 rounds, over an 8-byte salt, 32 bytes; the
/// cipher AES-256 with PKCS#7 padding in CBC mode (what the recipe's code
/// does) or ECB mode (what `kCCOptionPKCS7Padding + kCCModeCBC` selects:
/// the two constants add up to kCCOptionECBMode). The caller names the
/// mode; Coffer never guesses.
///
/// The recipe has no MAC: what comes out is unauthenticated, which the
/// result's type says. Only the padding is checked.
public enum LegacyRecipe {
    public enum Mode: String, CaseIterable, Sendable { case cbc, ecb }

    public static let rounds = 14_271

    public struct Envelope: Sendable {
        public var data: [UInt8]
        public var iv: [UInt8]
        public var salt: [UInt8]
    }

    /// Plaintext that no MAC vouches for: anyone who could write the stored
    /// data could have chosen it (within what the padding check catches).
    public struct UnauthenticatedPlaintext: Sendable {
        public let bytes: Data
        public var isAuthenticated: Bool { false }
    }

    /// Reads the dictionary from a binary or XML property list, or JSON.
    public static func envelope(_ bytes: some Collection<UInt8>) throws -> Envelope {
        let data = Data(bytes)
        var dictionary: [String: Any]?
        if data.starts(with: Array("bplist00".utf8)) { try BinaryPropertyListBounds.check(data, what: "the envelope") }
        if let plist = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil)
            as? [String: Any]
        {
            dictionary = plist
        } else if let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
            dictionary = json
        }
        guard let dictionary else {
            throw CofferError(.malformed, "not a property list (binary or XML) or JSON dictionary")
        }
        func field(_ name: String) throws -> [UInt8] {
            switch dictionary[name] {
            case let value as Data: return Array(value)
            case let value as String:
                guard let decoded = Data(base64Encoded: value) else {
                    throw CofferError(.malformed, "\(name) is not base64")
                }
                return Array(decoded)
            case nil: throw CofferError(.malformed, "the dictionary has no \(name)")
            default: throw CofferError(.malformed, "\(name) is neither data nor a base64 string")
            }
        }
        return Envelope(
            data: try field("EncryptionData"), iv: try field("EncryptionIV"), salt: try field("EncryptionSalt"))
    }

    public static func key(passphrase: [UInt8], salt: [UInt8]) throws -> SymmetricKey {
        try KDF.Insecure.PBKDF2.deriveKey(
            from: passphrase, salt: salt, using: .sha512, outputByteCount: 32, unsafeUncheckedRounds: rounds)
    }

    public static func decrypt(_ envelope: Envelope, passphrase: [UInt8], mode: Mode) throws -> UnauthenticatedPlaintext
    {
        guard envelope.salt.count == 8 else {
            throw CofferError(.malformed, "EncryptionSalt must be 8 bytes, not \(envelope.salt.count)")
        }
        guard !envelope.data.isEmpty, envelope.data.count % 16 == 0 else {
            throw CofferError(
                .malformed, "EncryptionData must be whole 16-byte AES blocks, not \(envelope.data.count) bytes")
        }
        let key = try key(passphrase: passphrase, salt: envelope.salt)
        var blocks: [UInt8]
        switch mode {
        case .cbc:
            guard envelope.iv.count == 16 else {
                throw CofferError(.malformed, "EncryptionIV must be 16 bytes for CBC, not \(envelope.iv.count)")
            }
            blocks = Array(
                try AES._CBC.decrypt(envelope.data, using: key, iv: AES._CBC.IV(ivBytes: envelope.iv), noPadding: true))
        case .ecb:
            blocks = envelope.data
            for start in stride(from: 0, to: blocks.count, by: 16) {
                try AES.inversePermute(&blocks[start..<(start + 16)], key: key)
            }
        }
        guard let count = blocks.last, (1...16).contains(count), blocks.suffix(Int(count)).allSatisfy({ $0 == count })
        else {
            throw CofferError(
                .payloadAuthenticationFailed,
                "the PKCS#7 padding is wrong: wrong passphrase, wrong mode (--mode cbc|ecb), or damaged data")
        }
        return UnauthenticatedPlaintext(bytes: Data(blocks.dropLast(Int(count))))
    }
}

/// CryptoKit's sealed boxes as apps stored them: `AES.GCM.SealedBox.combined`
/// or `ChaChaPoly.SealedBox.combined`, a 12-byte nonce ‖ ciphertext ‖ 16-byte
/// tag, under a 256-bit key.
/// CryptoKit's `AES.GCM` and `ChaChaPoly` sealed boxes (`combined`: nonce,
/// ciphertext, tag), as apps stored them.
///
/// ```swift
/// let key = Array(repeating: UInt8(7), count: 32)   // the app's 32-byte key
/// let stored = try CryptoKitBox.seal(Data("a note".utf8), key: key, cipher: .aesgcm)
/// let note = try CryptoKitBox.open(stored, key: key, cipher: .aesgcm)
/// ```
public enum CryptoKitBox {
    public enum Cipher: String, CaseIterable, Sendable { case aesgcm, chachapoly }

    static func key(_ bytes: some Collection<UInt8>) throws -> SymmetricKey {
        guard bytes.count == 32 else {
            throw CofferError(.invalidArgument, "the key must be 32 bytes (256 bits), not \(bytes.count)")
        }
        return SymmetricKey(data: Array(bytes))
    }

    /// Seals with a fresh random nonce (never the caller's).
    public static func seal(_ plaintext: some DataProtocol, key keyBytes: some Collection<UInt8>, cipher: Cipher) throws
        -> Data
    {
        let key = try key(keyBytes)
        switch cipher {
        case .aesgcm: return try AES.GCM.seal(plaintext, using: key).combined!
        case .chachapoly: return try ChaChaPoly.seal(plaintext, using: key).combined
        }
    }

    public static func open(_ combined: some DataProtocol, key keyBytes: some Collection<UInt8>, cipher: Cipher) throws
        -> Data
    {
        let key = try key(keyBytes)
        guard combined.count >= 28 else {
            throw CofferError(
                .malformed, "a sealed box is at least 28 bytes (12-byte nonce and 16-byte tag), not \(combined.count)")
        }
        do {
            switch cipher {
            case .aesgcm: return try AES.GCM.open(AES.GCM.SealedBox(combined: combined), using: key)
            case .chachapoly: return try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: combined), using: key)
            }
        } catch {
            throw CofferError(
                .payloadAuthenticationFailed,
                "the sealed box does not authenticate: wrong key, wrong cipher (--cipher aesgcm|chachapoly), or damaged data"
            )
        }
    }
}
