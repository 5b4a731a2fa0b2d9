import Crypto
import CryptoExtras
import Foundation

/// A key ring sealed under a key-encryption key (KEK), as stored in a file
/// (docs/sealed-values.md):
///
///     "CKR1" ‖ kind (0 raw key, 1 scrypt, 2 PBKDF2-SHA-256)
///     ‖ parameters (scrypt: log2 N, r, p — 1 byte each; PBKDF2: rounds, 4 bytes)
///     ‖ salt 16 (password kinds) ‖ check 16
///     ‖ nonce 12 ‖ AES-256-GCM-SIV(key ring) ‖ tag 16     (AAD = everything before the nonce)
///
/// base = the 32-byte KEK file, or the password's KDF output. The wrapping
/// key is HKDF-SHA-256(base, info "coffer key ring v1 wrap"); the check is
/// HKDF-SHA-256(base, info "coffer key ring v1 check")[:16]. A wrong check
/// is `wrongPassword`; a right check with a body that does not open is
/// tampering. Changing the password re-seals this one small blob.
public struct KeyRingFile: Sendable {
    public enum Secret: Sendable {
        case password([UInt8])
        /// A raw 32-byte key-encryption key.
        case key(SymmetricKey)
    }

    static let magic = Array("CKR1".utf8)

    public private(set) var keyRing: KeyRing
    /// The password KDF, or nil for a raw KEK.
    public private(set) var kdf: PasswordKDF?
    private var header: [UInt8]
    private var wrapKey: SymmetricKey

    /// True when the password parameters are weaker than Coffer's current
    /// defaults: `upgrade(password:)` re-derives with the defaults.
    public var upgradeDue: Bool { kdf?.isBelowCurrentDefault ?? false }

    /// A new file for `keyRing`, locked with `secret` (scrypt by default for a password).
    public init(keyRing: KeyRing, secret: Secret, kdf: PasswordKDF = .defaultScrypt) throws {
        self.keyRing = keyRing
        (header, wrapKey, self.kdf) = try KeyRingFile.lock(secret, kdf: kdf)
    }

    static func keys(base: SymmetricKey) -> (wrap: SymmetricKey, check: [UInt8]) {
        let wrap = HKDF<SHA256>.deriveKey(inputKeyMaterial: base, info: Array("coffer key ring v1 wrap".utf8), outputByteCount: 32)
        let check = HKDF<SHA256>.deriveKey(inputKeyMaterial: base, info: Array("coffer key ring v1 check".utf8), outputByteCount: 16)
        return (wrap, check.withUnsafeBytes { Array($0) })
    }

    static func lock(_ secret: Secret, kdf: PasswordKDF) throws -> (header: [UInt8], wrap: SymmetricKey, kdf: PasswordKDF?) {
        switch secret {
        case .key(let key):
            guard key.bitCount == 256 else { throw CofferError(.invalidArgument, "a key-encryption key is 32 bytes") }
            let (wrap, check) = keys(base: key)
            return (magic + [0] + check, wrap, nil)
        case .password(let password):
            guard !password.isEmpty else { throw CofferError(.invalidArgument, "the password is empty") }
            let salt = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
            let (wrap, check) = keys(base: try kdf.derive(password: password, salt: salt))
            return (magic + parameters(kdf) + salt + check, wrap, kdf)
        }
    }

    static func parameters(_ kdf: PasswordKDF) -> [UInt8] {
        switch kdf {
        case let .scrypt(logN, r, p): [1, logN, r, p]
        case let .pbkdf2SHA256(rounds): [2] + withUnsafeBytes(of: rounds.bigEndian, Array.init)
        }
    }

    /// Reads and unlocks a key ring file. Parameters above the caps are
    /// refused before any work; a wrong secret is `wrongPassword`; a
    /// changed body is `payloadAuthenticationFailed`.
    public init(contents: some DataProtocol, secret: Secret) throws {
        let bytes = Array(contents)
        guard bytes.count <= 1 << 20 else { throw CofferError(.malformed, "a key ring file is at most 1 MiB") }
        guard bytes.count > 5, Array(bytes.prefix(4)) == KeyRingFile.magic else {
            throw CofferError(.malformed, "not a Coffer key ring (it starts with \"CKR1\")")
        }
        var offset = 5
        let kind = bytes[4]
        var kdf: PasswordKDF?
        switch kind {
        case 0: kdf = nil
        case 1:
            guard bytes.count >= 8 else { throw CofferError(.malformed, "the key ring file is truncated") }
            kdf = .scrypt(logN: bytes[5], r: bytes[6], p: bytes[7]); offset = 8
        case 2:
            guard bytes.count >= 9 else { throw CofferError(.malformed, "the key ring file is truncated") }
            kdf = .pbkdf2SHA256(rounds: bytes[5..<9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }); offset = 9
        default:
            throw CofferError(.unsupported, "key ring protection kind \(kind) is not supported")
        }
        let saltCount = kdf == nil ? 0 : 16
        guard bytes.count >= offset + saltCount + 16 + 12 + 16 else { throw CofferError(.malformed, "the key ring file is truncated") }
        let salt = Array(bytes[offset..<(offset + saltCount)])
        let check = Array(bytes[(offset + saltCount)..<(offset + saltCount + 16)])
        let headerEnd = offset + saltCount + 16
        let base: SymmetricKey
        switch (secret, kdf) {
        case let (.password(password), .some(kdf)): base = try kdf.derive(password: password, salt: salt)
        case let (.key(key), nil):
            guard key.bitCount == 256 else { throw CofferError(.invalidArgument, "a key-encryption key is 32 bytes") }
            base = key
        case (.key, .some):
            throw CofferError(.invalidArgument, "this key ring is locked with a password, not a key file")
        case (.password, nil):
            throw CofferError(.invalidArgument, "this key ring is locked with a key file, not a password")
        }
        let (wrap, expected) = KeyRingFile.keys(base: base)
        // The check is compared in constant time.
        guard ConstantTime.equal(expected, check) else {
            throw CofferError(.wrongPassword, kdf == nil ? "the key file does not unlock this key ring" : "wrong password for this key ring")
        }
        let header = Array(bytes[..<headerEnd])
        let body: Data
        do {
            body = try AES.GCM._SIV.open(AES.GCM._SIV.SealedBox(combined: bytes[headerEnd...]), using: wrap, authenticating: header)
        } catch {
            throw CofferError(.payloadAuthenticationFailed, "the key ring file was changed: its sealed body does not open under the right password")
        }
        keyRing = try KeyRing.deserialize(Array(body))
        self.kdf = kdf
        self.header = header
        wrapKey = wrap
    }

    /// The file's bytes: the same header, a fresh nonce.
    public func contents() throws -> Data {
        let box = try AES.GCM._SIV.seal(keyRing.serialized(), using: wrapKey, nonce: AES.GCM._SIV.Nonce(), authenticating: header)
        return Data(header) + box.combined
    }

    public mutating func update(_ change: (inout KeyRing) throws -> Void) rethrows {
        try change(&keyRing)
    }

    /// Locks with a new secret (a new salt; the default scrypt for a
    /// password unless `kdf` says otherwise). No data is re-encrypted.
    public mutating func changeSecret(to secret: Secret, kdf: PasswordKDF = .defaultScrypt) throws {
        (header, wrapKey, self.kdf) = try KeyRingFile.lock(secret, kdf: kdf)
    }

    /// Re-derives with the current defaults of the same kind.
    public mutating func upgrade(password: [UInt8]) throws {
        guard let kdf else { return }
        let target: PasswordKDF = if case .pbkdf2SHA256 = kdf { .defaultPBKDF2 } else { .defaultScrypt }
        try changeSecret(to: .password(password), kdf: target)
    }
}
