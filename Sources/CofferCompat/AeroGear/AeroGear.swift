import Coffer
import Crypto
import CryptoExtras
import Foundation

/// What AeroGear-Crypto for iOS sealed, and how to open it (docs/compat.md,
/// "AeroGear"): the "Xmas" app of the seed articles kept each present's
/// description this way. Read once, then moved into a `CofferStore`.
///
/// ```swift
/// let generation = try AeroGear.Generation(ivOrNonce: nonce)       // 24 bytes: secretbox
/// let key = try AeroGear.key(password: typed, salt: salt, generation: generation)
/// let description = try AeroGear.open(sealed, ivOrNonce: nonce, key: key, generation: generation)
/// ```
public enum AeroGear {
    /// Which AeroGear-Crypto wrote the data.
    public enum Generation: String, Sendable, CaseIterable, CustomStringConvertible {
        /// 0.1.0 – 0.2.1 (Nov 2013 – Feb 2014): a 160-byte PBKDF2 output
        /// and AES-128-CBC with PKCS#7 padding, a 16-byte IV. **Not
        /// authenticated**: a wrong password is caught by the padding and
        /// by UTF-8, which a wrong key passes about once in 10⁵ values.
        case cbc
        /// 0.2.2 – 1.0.0: a 32-byte PBKDF2 output and NaCl's secretbox
        /// (XSalsa20-Poly1305, the tag first), a 24-byte nonce.
        case secretBox

        /// The generation that stored an IV or nonce of this length.
        public init(ivOrNonce: some Collection<UInt8>) throws {
            switch ivOrNonce.count {
            case 16: self = .cbc
            case 24: self = .secretBox
            default:
                throw CofferError(
                    .malformed,
                    "an AeroGear IV is 16 bytes (AES-CBC) and a nonce 24 (secretbox), not \(ivOrNonce.count)")
            }
        }

        /// How many bytes `AGPBKDF2` gave in this generation.
        public var keyLength: Int { self == .cbc ? 160 : 32 }

        public var description: String { rawValue }
    }

    /// `AGPBKDF2`'s iterations, in every version.
    public static let rounds = 20_000

    /// The bytes `AGPBKDF2` gave PBKDF2 for `password`: its UTF-8, cut to
    /// the number of UTF-16 code units (`CCKeyDerivationPBKDF` was given
    /// `[password length]`), so a password with characters outside ASCII
    /// lost its end. Reproduced exactly: it is what the data was sealed
    /// under.
    public static func passwordBytes(_ password: String) -> [UInt8] {
        Array(Array(password.utf8).prefix(password.utf16.count))
    }

    /// `AGPBKDF2`'s key: PBKDF2-HMAC-SHA1, 20,000 rounds, the
    /// generation's length, over ``passwordBytes(_:)``.
    public static func key(password: String, salt: some Collection<UInt8>, generation: Generation) throws
        -> SecretBytes
    {
        guard !salt.isEmpty else { throw CofferError(.malformed, "the AeroGear salt is empty") }
        let derived = try KDF.Insecure.PBKDF2.deriveKey(
            from: passwordBytes(password), salt: Array(salt), using: .insecureSHA1,
            outputByteCount: generation.keyLength, unsafeUncheckedRounds: rounds)
        return SecretBytes(derived.withUnsafeBytes { Array($0) })
    }

    /// One sealed value opened. A wrong password, key or IV, or a changed
    /// byte, is `wrongPassword`, never garbage: secretbox checks its tag;
    /// CBC checks its padding and that the value is UTF-8 text (what the
    /// Xmas app sealed), which is all CBC data allows.
    public static func open(
        _ sealed: some Collection<UInt8>, ivOrNonce: some Collection<UInt8>, key: SecretBytes, generation: Generation
    ) throws -> Data {
        switch generation {
        case .secretBox:
            guard key.count >= SecretBox.keySize else {
                throw CofferError(.invalidArgument, "a secretbox key is 32 bytes, not \(key.count)")
            }
            do {
                return Data(
                    try SecretBox.open(
                        sealed, nonce: ivOrNonce, key: key.withUnsafeBytes { Array($0.prefix(SecretBox.keySize)) }))
            } catch let error as CofferError where error.code == .payloadAuthenticationFailed {
                throw CofferError(
                    .wrongPassword, "the value does not open: the password is wrong, or the data was changed")
            }
        case .cbc:
            return try openCBC(Array(sealed), iv: Array(ivOrNonce), key: key)
        }
    }

    /// AES-128-CBC (the first 16 bytes of the key), PKCS#7 padding.
    static func openCBC(_ sealed: [UInt8], iv: [UInt8], key: SecretBytes) throws -> Data {
        guard iv.count == 16 else { throw CofferError(.malformed, "an AeroGear CBC IV is 16 bytes, not \(iv.count)") }
        guard !sealed.isEmpty, sealed.count % 16 == 0 else {
            throw CofferError(.malformed, "AES-CBC data is whole 16-byte blocks, not \(sealed.count) bytes")
        }
        guard key.count >= 16 else { throw CofferError(.invalidArgument, "an AES-128 key is 16 bytes") }
        let aesKey = SymmetricKey(data: key.withUnsafeBytes { Array($0.prefix(16)) })
        let blocks = Array(try AES._CBC.decrypt(sealed, using: aesKey, iv: AES._CBC.IV(ivBytes: iv), noPadding: true))
        guard let count = blocks.last, (1...16).contains(count), blocks.suffix(Int(count)).allSatisfy({ $0 == count }),
            String(validating: blocks.dropLast(Int(count)), as: UTF8.self) != nil
        else {
            throw CofferError(
                .wrongPassword,
                "the value does not open: the password is wrong, or the data was changed (CBC data is not authenticated: checked by its padding and UTF-8 only)"
            )
        }
        return Data(blocks.dropLast(Int(count)))
    }

    /// NaCl's `crypto_box` opened (Curve25519, then XSalsa20-Poly1305, as
    /// `AGCryptoBox` sealed from 0.2.2): `box` is the tag, then the
    /// ciphertext.
    public static func openBox(
        _ box: some Collection<UInt8>, nonce: some Collection<UInt8>, senderPublicKey: some Collection<UInt8>,
        recipientPrivateKey: SecretBytes
    ) throws -> Data {
        let shared: [UInt8]
        do {
            let privateKey = try Curve25519.KeyAgreement.PrivateKey(
                rawRepresentation: recipientPrivateKey.withUnsafeBytes { Array($0) })
            let publicKey = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: Array(senderPublicKey))
            shared = try privateKey.sharedSecretFromKeyAgreement(with: publicKey).withUnsafeBytes { Array($0) }
        } catch {
            throw CofferError(.invalidArgument, "a crypto_box key is a 32-byte Curve25519 key")
        }
        let key = HSalsa20.hash(key: shared, input: [UInt8](repeating: 0, count: 16))
        do {
            return Data(try SecretBox.open(box, nonce: nonce, key: key))
        } catch let error as CofferError where error.code == .payloadAuthenticationFailed {
            throw CofferError(
                .payloadAuthenticationFailed, "the box does not open: wrong keys or nonce, or damaged data")
        }
    }
}
