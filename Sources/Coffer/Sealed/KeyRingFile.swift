import Crypto
import CryptoExtras
import Foundation

/// A key ring sealed under a key-encryption key (KEK), as stored in a file
/// (docs/sealed-values.md). Version 2, written by every change:
///
///     "CKR2" ‖ kind (0 raw key, 1 scrypt, 2 PBKDF2-SHA-256)
///     ‖ parameters (scrypt: log2 N, r, p — 1 byte each; PBKDF2: rounds, 4 bytes; raw key: none)
///     ‖ salt 16 ‖ check 16 ‖ ring id 16 ‖ generation 8 (big-endian)
///     ‖ nonce 12 ‖ AES-256-GCM-SIV(key ring) ‖ tag 16     (AAD = everything before the nonce)
///
/// base = the password's KDF output, or HKDF-SHA-256(KEK, salt, info
/// "coffer key ring v2 kek") for a raw key (so two rings under one KEK are
/// not linkable by their check). The wrapping key is HKDF-SHA-256(base,
/// info "coffer key ring v2 wrap"); the check is HKDF-SHA-256(base, info
/// "coffer key ring v2 check")[:16]. A wrong check is `wrongPassword`; a
/// right check with a body that does not open is tampering. The ring id
/// and the generation, which grows by one with every write, are
/// authenticated, so an older copy of the file cannot pass for a newer one
/// (``KeyRingStore`` keeps the high-water mark).
///
/// Version 1 ("CKR1", no id, no generation, no salt for a raw key) is still
/// read, as generation 0 with an id derived from its header, and is
/// rewritten as version 2 on the next change.
public struct KeyRingFile: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// What unlocks a key ring. Never printed: `description` and `dump`
    /// show only the kind.
    public enum Secret: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        case password([UInt8])
        /// A raw 32-byte key-encryption key.
        case key(SymmetricKey)

        public var description: String {
            switch self {
            case .password: "KeyRingFile.Secret.password(<redacted>)"
            case .key: "KeyRingFile.Secret.key(<redacted>)"
            }
        }
        public var debugDescription: String { description }
        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .enum) }
    }

    static let magicV1 = Array("CKR1".utf8)
    static let magic = Array("CKR2".utf8)

    public private(set) var keyRing: KeyRing
    /// The password KDF, or nil for a raw KEK.
    public private(set) var kdf: PasswordKDF?
    /// 16 random bytes naming this ring for its whole life (kept across
    /// password changes): the key of its rollback high-water mark.
    public let ringID: [UInt8]
    /// How many times the file has been written; authenticated.
    public internal(set) var generation: UInt64
    private var lockHeader: [UInt8]
    private var wrapKey: SymmetricKey

    /// True when the password parameters are weaker than Coffer's current
    /// defaults: `upgrade(password:)` re-derives with the defaults.
    public var upgradeDue: Bool { kdf?.isBelowCurrentDefault ?? false }

    public var description: String { "KeyRingFile(\(keyRing), generation \(generation))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["keyRing": keyRing, "generation": generation], displayStyle: .struct)
    }

    /// A new file for `keyRing`, locked with `secret` (scrypt by default
    /// for a password), at generation 1.
    public init(keyRing: KeyRing, secret: Secret, kdf: PasswordKDF = .defaultScrypt) throws {
        self.keyRing = keyRing
        ringID = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        generation = 1
        (lockHeader, wrapKey, self.kdf) = try KeyRingFile.lock(secret, kdf: kdf)
    }

    static func keys(base: SymmetricKey, version: Int) -> (wrap: SymmetricKey, check: [UInt8]) {
        let wrap = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: base, info: Array("coffer key ring v\(version) wrap".utf8), outputByteCount: 32)
        let check = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: base, info: Array("coffer key ring v\(version) check".utf8), outputByteCount: 16)
        return (wrap, check.withUnsafeBytes { Array($0) })
    }

    static func kekBase(_ key: SymmetricKey, salt: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: key, salt: salt, info: Array("coffer key ring v2 kek".utf8), outputByteCount: 32)
    }

    /// The version 2 header up to the check: magic, kind, parameters, salt, check.
    static func lock(_ secret: Secret, kdf: PasswordKDF) throws -> (
        header: [UInt8], wrap: SymmetricKey, kdf: PasswordKDF?
    ) {
        let salt = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        switch secret {
        case .key(let key):
            guard key.bitCount == 256 else { throw CofferError(.invalidArgument, "a key-encryption key is 32 bytes") }
            let (header, wrap) = lockHeader(kdf: nil, salt: salt, base: kekBase(key, salt: salt))
            return (header, wrap, nil)
        case .password(let password):
            guard !password.isEmpty else { throw CofferError(.invalidArgument, "the password is empty") }
            let (header, wrap) = lockHeader(kdf: kdf, salt: salt, base: try kdf.derive(password: password, salt: salt))
            return (header, wrap, kdf)
        }
    }

    /// The version 2 header up to the check, and the wrapping key, from a
    /// `base` already derived for `salt` (the KDF's output, or ``kekBase``).
    static func lockHeader(kdf: PasswordKDF?, salt: [UInt8], base: SymmetricKey) -> (
        header: [UInt8], wrap: SymmetricKey
    ) {
        let (wrap, check) = keys(base: base, version: 2)
        return (magic + (kdf.map(parameters) ?? [0]) + salt + check, wrap)
    }

    static func parameters(_ kdf: PasswordKDF) -> [UInt8] {
        switch kdf {
        case let .scrypt(logN, r, p): [1, logN, r, p]
        case let .pbkdf2SHA256(rounds): [2] + withUnsafeBytes(of: rounds.bigEndian, Array.init)
        }
    }

    /// The ring id and generation stored in a file, read without any
    /// secret (nil when the bytes are not a key ring). Not authenticated
    /// until the file is opened.
    public static func peekGeneration(_ contents: some DataProtocol) -> (ringID: [UInt8], generation: UInt64)? {
        let bytes = Array(contents.prefix(80))
        guard let layout = try? Layout(bytes) else { return nil }
        return (layout.ringID(bytes), layout.generation(bytes))
    }

    /// Where the parts of a header are, for either version.
    struct Layout {
        let version: Int
        let kdf: PasswordKDF?
        let saltRange: Range<Int>
        let checkRange: Range<Int>
        let headerEnd: Int

        init(_ bytes: [UInt8]) throws {
            guard bytes.count > 5, [KeyRingFile.magic, KeyRingFile.magicV1].contains(Array(bytes.prefix(4))) else {
                throw CofferError(.malformed, "not a Coffer key ring (it starts with \"CKR2\" or \"CKR1\")")
            }
            version = bytes[3] == UInt8(ascii: "2") ? 2 : 1
            var offset = 5
            switch bytes[4] {
            case 0: kdf = nil
            case 1:
                guard bytes.count >= 8 else { throw CofferError(.malformed, "the key ring file is truncated") }
                kdf = .scrypt(logN: bytes[5], r: bytes[6], p: bytes[7])
                offset = 8
            case 2:
                guard bytes.count >= 9 else { throw CofferError(.malformed, "the key ring file is truncated") }
                kdf = .pbkdf2SHA256(rounds: bytes[5..<9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
                offset = 9
            default:
                throw CofferError(.unsupported, "key ring protection kind \(bytes[4]) is not supported")
            }
            let saltCount = kdf == nil && version == 1 ? 0 : 16
            saltRange = offset..<(offset + saltCount)
            checkRange = saltRange.upperBound..<(saltRange.upperBound + 16)
            headerEnd = checkRange.upperBound + (version == 2 ? 16 + 8 : 0)
            guard bytes.count >= headerEnd else { throw CofferError(.malformed, "the key ring file is truncated") }
        }

        func ringID(_ bytes: [UInt8]) -> [UInt8] {
            guard version == 2 else {
                // A version 1 header never changes between writes: it names the ring.
                return Array(SHA256.hash(data: Array("coffer key ring v1 id".utf8) + bytes[..<headerEnd]).prefix(16))
            }
            return Array(bytes[checkRange.upperBound..<(checkRange.upperBound + 16)])
        }

        func generation(_ bytes: [UInt8]) -> UInt64 {
            guard version == 2 else { return 0 }
            return bytes[(headerEnd - 8)..<headerEnd].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
    }

    /// Reads and unlocks a key ring file. Parameters above the caps are
    /// refused before any work; a wrong secret is `wrongPassword`; a
    /// changed body is `payloadAuthenticationFailed`.
    public init(contents: some DataProtocol, secret: Secret) throws {
        let bytes = Array(contents)
        guard bytes.count <= 1 << 20 else { throw CofferError(.malformed, "a key ring file is at most 1 MiB") }
        let layout = try Layout(bytes)
        guard bytes.count >= layout.headerEnd + 12 + 16 else {
            throw CofferError(.malformed, "the key ring file is truncated")
        }
        let salt = Array(bytes[layout.saltRange])
        let check = Array(bytes[layout.checkRange])
        let base: SymmetricKey
        switch (secret, layout.kdf) {
        case let (.password(password), .some(kdf)): base = try kdf.derive(password: password, salt: salt)
        case let (.key(key), nil):
            guard key.bitCount == 256 else { throw CofferError(.invalidArgument, "a key-encryption key is 32 bytes") }
            base = layout.version == 2 ? KeyRingFile.kekBase(key, salt: salt) : key
        case (.key, .some):
            throw CofferError(.invalidArgument, "this key ring is locked with a password, not a key file")
        case (.password, nil):
            throw CofferError(.invalidArgument, "this key ring is locked with a key file, not a password")
        }
        let (wrap, expected) = KeyRingFile.keys(base: base, version: layout.version)
        // The check is compared in constant time.
        guard ConstantTime.equal(expected, check) else {
            throw CofferError(
                .wrongPassword,
                layout.kdf == nil ? "the key file does not unlock this key ring" : "wrong password for this key ring")
        }
        let header = Array(bytes[..<layout.headerEnd])
        let body: Data
        do {
            body = try AES.GCM._SIV.open(
                AES.GCM._SIV.SealedBox(combined: bytes[layout.headerEnd...]), using: wrap, authenticating: header)
        } catch {
            throw CofferError(
                .payloadAuthenticationFailed,
                "the key ring file was changed: its sealed body does not open under the right password")
        }
        keyRing = try KeyRing.deserialize(Array(body))
        kdf = layout.kdf
        ringID = layout.ringID(bytes)
        generation = layout.generation(bytes)
        if layout.version == 2 {
            lockHeader = Array(bytes[..<layout.checkRange.upperBound])
            wrapKey = wrap
        } else if case .key(let key) = secret {
            // Written back as version 2: a raw KEK gets a salt (cheap: HKDF).
            let salt = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
            (lockHeader, wrapKey) = KeyRingFile.lockHeader(
                kdf: nil, salt: salt, base: KeyRingFile.kekBase(key, salt: salt))
        } else {
            // A password ring keeps its salt, so the KDF output already
            // derived serves version 2 too: no second KDF run.
            (lockHeader, wrapKey) = KeyRingFile.lockHeader(kdf: layout.kdf, salt: salt, base: base)
        }
    }

    /// The file's bytes at the current generation, with a fresh nonce.
    public func contents() throws -> Data {
        let header = lockHeader + ringID + withUnsafeBytes(of: generation.bigEndian, Array.init)
        let box = try AES.GCM._SIV.seal(
            keyRing.serialized(), using: wrapKey, nonce: AES.GCM._SIV.Nonce(), authenticating: header)
        return Data(header) + box.combined
    }

    public mutating func update<T>(_ change: (inout KeyRing) throws -> T) rethrows -> T {
        try change(&keyRing)
    }

    /// Locks with a new secret (a new salt; the default scrypt for a
    /// password unless `kdf` says otherwise) and, in the same write, adds a
    /// new primary key: whoever holds an old copy of the file and the old
    /// secret cannot open values sealed after the change. Values sealed
    /// before stay exposed to them until rewrapped and their key destroyed.
    /// Returns the new primary's id.
    @discardableResult
    public mutating func changeSecret(to secret: Secret, kdf: PasswordKDF = .defaultScrypt) throws -> UInt32 {
        let relocked = try KeyRingFile.lock(secret, kdf: kdf)
        let primary = try keyRing.rotate()
        (lockHeader, wrapKey, self.kdf) = relocked
        return primary
    }

    /// Re-derives with the current defaults of the same kind (same password).
    public mutating func upgrade(password: [UInt8]) throws {
        guard let kdf else { return }
        let target: PasswordKDF = if case .pbkdf2SHA256 = kdf { .defaultPBKDF2 } else { .defaultScrypt }
        (lockHeader, wrapKey, self.kdf) = try KeyRingFile.lock(.password(password), kdf: target)
    }
}
