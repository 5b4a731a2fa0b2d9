import Crypto
import CryptoExtras
import Foundation

/// One way into a protected container: a random 256-bit data key wrapped
/// under a key made from an ``UnlockSecret`` (docs/key-slots.md).
///
///     kind (1) ‖ parameters ‖ salt (16) ‖ nonce (12) ‖ AES-256-GCM-SIV(data key) (32) ‖ tag (16)
///
///     kind 0  a 32-byte key-encryption key; no parameters
///     kind 1  scrypt; log2 N, r, p (1 byte each)
///     kind 2  PBKDF2-HMAC-SHA-256; rounds (4 bytes, big-endian)
///     kind 3  a key held elsewhere (an HSM over PKCS#11); no parameters
///
/// The wrapping key is HKDF-SHA-256(base, salt, "coffer key slot v1"),
/// where base is the KEK itself or the password KDF's 32-byte output for
/// this salt. Kind 3 is sealed with AES-256-GCM by its holder, under a key
/// that never leaves it (``UnlockSecret/keyWrapper(named:seal:open:)``), with
/// the same associated data. The associated data is "coffer key slot v1" ‖ len(binding)
/// ‖ binding ‖ kind ‖ parameters ‖ salt, where the container names itself
/// in `binding` (its magic and id), so a slot opens only in its own
/// container and with its own parameters. Containers seal their body
/// under the data key with their whole header, slots included, as
/// associated data.
///
/// File keychains (`CKC1` version 2) and key rings (`CKR3`) are made of
/// these slots; a container may hold several (a passphrase and a recovery
/// KEK), each wrapping the same data key.
public struct KeySlot: Sendable, Equatable, CustomStringConvertible {
    /// How the slot's wrapping key is made: nil `kdf` for a KEK.
    public let kdf: PasswordKDF?
    /// Kind 3: sealed by a key held elsewhere (``UnlockSecret/keyWrapper(named:seal:open:)``).
    public let isHeldElsewhere: Bool
    let salt: [UInt8]
    /// nonce ‖ wrapped data key ‖ tag.
    let sealed: [UInt8]

    static let label = Array("coffer key slot v1".utf8)
    static let sealedCount = 12 + 32 + 16
    /// The most a container's binding may be (it is length-prefixed by one byte).
    static let maximumBinding = 255

    public var description: String {
        isHeldElsewhere ? "KeySlot(held elsewhere)" : kdf.map { "KeySlot(\($0.description))" } ?? "KeySlot(key)"
    }

    init(kdf: PasswordKDF?, isHeldElsewhere: Bool = false, salt: [UInt8], sealed: [UInt8]) {
        self.kdf = kdf
        self.isHeldElsewhere = isHeldElsewhere
        self.salt = salt
        self.sealed = sealed
    }

    /// A slot wrapping `dataKey` for `secret`: a new salt, the password KDF
    /// `kdf` for a password (scrypt's default unless told), HKDF for a key.
    public static func wrap(
        _ dataKey: SymmetricKey, for secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt, binding: [UInt8]
    ) throws -> KeySlot {
        let salt = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        let material = try secret.material()
        let used: PasswordKDF?
        switch material {
        case .key: used = nil
        case .password: used = kdf
        case .wrapper(let wrapper): return try wrap(dataKey, by: wrapper, salt: salt, binding: binding)
        }
        let base = try baseKey(material, kdf: used, salt: salt)
        return try wrap(dataKey, base: base, kdf: used, salt: salt, binding: binding, nonce: AES.GCM._SIV.Nonce())
    }

    /// A slot from a base already derived for `salt` (a migration reuses
    /// the KDF output of the old format, so the password is stretched once).
    package static func wrap(
        _ dataKey: SymmetricKey, base: SymmetricKey, kdf: PasswordKDF?, salt: [UInt8], binding: [UInt8],
        nonce: AES.GCM._SIV.Nonce
    ) throws -> KeySlot {
        guard dataKey.bitCount == 256 else { throw CofferError(.invalidArgument, "a data key is 32 bytes") }
        guard binding.count <= maximumBinding, salt.count == 16 else {
            throw CofferError(.invalidArgument, "a key slot's binding is at most 255 bytes and its salt 16")
        }
        let header = [kind(kdf)] + parameters(kdf) + salt
        let box = try dataKey.withUnsafeBytes {
            try AES.GCM._SIV.seal(
                Array($0), using: wrappingKey(base: base, salt: salt), nonce: nonce,
                authenticating: associatedData(header, binding: binding))
        }
        return KeySlot(kdf: kdf, salt: salt, sealed: Array(box.combined))
    }

    /// A kind 3 slot: `dataKey` sealed by `wrapper`'s holder.
    static func wrap(_ dataKey: SymmetricKey, by wrapper: KeyWrapper, salt: [UInt8], binding: [UInt8]) throws
        -> KeySlot
    {
        guard dataKey.bitCount == 256 else { throw CofferError(.invalidArgument, "a data key is 32 bytes") }
        guard binding.count <= maximumBinding else {
            throw CofferError(.invalidArgument, "a key slot's binding is at most 255 bytes")
        }
        let sealed = try dataKey.withUnsafeBytes {
            try wrapper.seal(Array($0), associatedData([3] + salt, binding: binding))
        }
        guard sealed.count == sealedCount else {
            throw CofferError(
                .malformed, "\(wrapper.name) sealed 32 bytes into \(sealed.count), not \(sealedCount) (AES-256-GCM)")
        }
        return KeySlot(kdf: nil, isHeldElsewhere: true, salt: salt, sealed: sealed)
    }

    /// The data key from a kind 3 slot, opened by `wrapper`'s holder.
    func unwrap(by wrapper: KeyWrapper, binding: [UInt8]) throws -> SymmetricKey {
        let opened = try wrapper.open(sealed, Self.associatedData([3] + salt, binding: binding))
        guard opened.count == 32 else {
            throw CofferError(.malformed, "\(wrapper.name) opened a key slot to \(opened.count) bytes, not 32")
        }
        return SymmetricKey(data: opened)
    }

    /// The data key, if `secret` opens this slot. A password for a key
    /// slot (or the reverse) is `invalidArgument`; the right kind that does
    /// not open it is `wrongPassword` (the slot may also be damaged: the two
    /// cannot be told apart). Parameters above the reader's caps are
    /// refused before any work.
    public func unwrap(with secret: UnlockSecret, binding: [UInt8]) throws -> SymmetricKey {
        let material = try secret.material()
        if case .wrapper(let wrapper) = material {
            guard isHeldElsewhere else {
                throw CofferError(.invalidArgument, "this key slot is not one a key held elsewhere opens")
            }
            return try unwrap(by: wrapper, binding: binding)
        }
        switch (material, kdf) {
        case (_, nil) where isHeldElsewhere:
            throw CofferError(.invalidArgument, "this is locked with a key held elsewhere (an HSM)")
        case (.password, nil):
            throw CofferError(.invalidArgument, "this is locked with a key, not a password")
        case (.key, .some):
            throw CofferError(.invalidArgument, "this is locked with a password, not a key")
        default: break
        }
        return try unwrap(base: try Self.baseKey(material, kdf: kdf, salt: salt), binding: binding)
    }

    /// The data key from a base already derived for this slot's salt.
    package func unwrap(base: SymmetricKey, binding: [UInt8]) throws -> SymmetricKey {
        let header = [Self.kind(kdf)] + Self.parameters(kdf) + salt
        do {
            let opened = try AES.GCM._SIV.open(
                AES.GCM._SIV.SealedBox(combined: sealed), using: Self.wrappingKey(base: base, salt: salt),
                authenticating: Self.associatedData(header, binding: binding))
            return SymmetricKey(data: opened)
        } catch {
            throw CofferError(
                .wrongPassword,
                kdf == nil ? "the key does not open this key slot" : "wrong password for this key slot")
        }
    }

    /// The KDF output (or the KEK) for `salt`: the expensive step, after the caps are checked.
    package static func baseKey(_ material: UnlockSecret.Material, kdf: PasswordKDF?, salt: [UInt8]) throws
        -> SymmetricKey
    {
        switch (material, kdf) {
        case (.key(let key), _): return key
        case (.password(let password), let kdf?): return try kdf.derive(password: password.revealed(), salt: salt)
        case (.password, nil): throw CofferError(.invalidArgument, "a password needs a password KDF")
        case (.wrapper, _): throw CofferError(.invalidArgument, "a key held elsewhere is never exported")
        }
    }

    static func wrappingKey(base: SymmetricKey, salt: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: base, salt: salt, info: label, outputByteCount: 32)
    }

    static func associatedData(_ header: [UInt8], binding: [UInt8]) -> [UInt8] {
        label + [UInt8(binding.count)] + binding + header
    }

    static func kind(_ kdf: PasswordKDF?) -> UInt8 {
        switch kdf {
        case nil: 0
        case .scrypt: 1
        case .pbkdf2SHA256: 2
        }
    }

    static func parameters(_ kdf: PasswordKDF?) -> [UInt8] {
        switch kdf {
        case nil: []
        case let .scrypt(logN, r, p): [logN, r, p]
        case let .pbkdf2SHA256(rounds): withUnsafeBytes(of: rounds.bigEndian, Array.init)
        }
    }

    // MARK: bytes

    /// The slot's bytes.
    public var serialized: [UInt8] { [isHeldElsewhere ? 3 : Self.kind(kdf)] + Self.parameters(kdf) + salt + sealed }

    /// Reads one slot from the front of `bytes` and drops it. An unknown
    /// kind is `unsupported`; too few bytes `malformed`. The KDF's caps are
    /// checked when the slot is unwrapped, not here.
    public static func read(from bytes: inout ArraySlice<UInt8>) throws -> KeySlot {
        guard let kind = bytes.first else { throw CofferError(.malformed, "a key slot is missing") }
        let parameterCount: Int
        switch kind {
        case 0: parameterCount = 0
        case 1: parameterCount = 3
        case 2: parameterCount = 4
        case 3: parameterCount = 0
        default:
            throw CofferError(
                .unsupported, "key slot kind \(kind) is not supported (0 key, 1 scrypt, 2 PBKDF2, 3 held elsewhere)")
        }
        let total = 1 + parameterCount + 16 + sealedCount
        guard bytes.count >= total else { throw CofferError(.malformed, "a key slot is truncated") }
        let start = bytes.startIndex
        let parameters = Array(bytes[(start + 1)..<(start + 1 + parameterCount)])
        let kdf: PasswordKDF? =
            switch kind {
            case 1: .scrypt(logN: parameters[0], r: parameters[1], p: parameters[2])
            case 2: .pbkdf2SHA256(rounds: parameters.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            default: nil
            }
        let saltStart = start + 1 + parameterCount
        let slot = KeySlot(
            kdf: kdf, isHeldElsewhere: kind == 3, salt: Array(bytes[saltStart..<(saltStart + 16)]),
            sealed: Array(bytes[(saltStart + 16)..<(start + total)]))
        bytes = bytes[(start + total)...]
        return slot
    }
}

extension KeySlot {
    /// The data key from the first of `slots` that `secret` opens. Slots
    /// of the other kind are skipped; with none of the right kind the
    /// error says so; with some and none opening, `wrongPassword`. At most
    /// `maximumTried` slots are tried (each may cost a KDF run).
    public static func unwrap(
        _ slots: [KeySlot], with secret: UnlockSecret, binding: [UInt8], maximumTried: Int = 8
    ) throws -> (dataKey: SymmetricKey, index: Int) {
        let material = try secret.material()
        let isPassword: Bool
        switch material {
        case .password: isPassword = true
        case .key: isPassword = false
        case .wrapper(let wrapper): return try unwrap(slots, by: wrapper, binding: binding, maximumTried: maximumTried)
        }
        let candidates = slots.indices.filter { (slots[$0].kdf != nil) == isPassword && !slots[$0].isHeldElsewhere }
        guard !candidates.isEmpty else {
            throw CofferError(
                .invalidArgument,
                isPassword ? "this is locked with a key, not a password" : "this is locked with a password, not a key")
        }
        for index in candidates.prefix(maximumTried) {
            let slot = slots[index]
            let base = try baseKey(material, kdf: slot.kdf, salt: slot.salt)
            if let key = try? slot.unwrap(base: base, binding: binding) { return (key, index) }
        }
        throw CofferError(
            .wrongPassword,
            isPassword ? "wrong password (no key slot opens with it)" : "the key opens none of the key slots")
    }

    /// The first kind 3 slot `wrapper` opens. The holder's own failures
    /// (a token gone, a wrong PIN) are its errors, not `wrongPassword`.
    static func unwrap(_ slots: [KeySlot], by wrapper: KeyWrapper, binding: [UInt8], maximumTried: Int) throws
        -> (dataKey: SymmetricKey, index: Int)
    {
        let candidates = slots.indices.filter { slots[$0].isHeldElsewhere }
        guard !candidates.isEmpty else {
            throw CofferError(.invalidArgument, "this is locked with a key or a password, not a key held elsewhere")
        }
        var last: CofferError?
        for index in candidates.prefix(maximumTried) {
            do {
                return (try slots[index].unwrap(by: wrapper, binding: binding), index)
            } catch let error as CofferError where error.code == .wrongPassword {
                last = error
            }
        }
        throw last ?? CofferError(.wrongPassword, "\(wrapper.name) opens none of the key slots")
    }
}
