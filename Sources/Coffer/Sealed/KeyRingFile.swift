import Crypto
import CryptoExtras
import Foundation

/// A key ring sealed under a random data key, which ``KeySlot``s wrap for
/// the secrets that unlock it (docs/sealed-values.md, docs/key-slots.md).
/// Version 3, written by every change:
///
///     "CKR3" ‖ ring id 16 ‖ generation 8 (big-endian) ‖ slot count 1 ‖ slots
///     ‖ nonce 12 ‖ AES-256-GCM-SIV(data key, key ring) ‖ tag 16     (AAD = everything before the nonce)
///
/// Each slot's binding is "CKR3" ‖ ring id. A secret that opens no slot is
/// `wrongPassword`; an opened slot with a body that does not open is
/// tampering. The ring id and the generation, which grows by one with every
/// write, are authenticated, so an older copy of the file cannot pass for a
/// newer one (``KeyRingStore`` keeps the high-water mark).
///
/// Versions 1 and 2 ("CKR1", "CKR2": the ring sealed directly under a key
/// from the secret) are still read, and rewritten as version 3 on the next
/// change, reusing the password KDF's output so the password is stretched
/// once (`KeyRingFile+Legacy.swift`).
public struct KeyRingFile: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    static let magic = Array("CKR3".utf8)
    /// At most this many slots are read; each may cost a KDF run.
    static let maximumSlots = 8

    public private(set) var keyRing: KeyRing
    /// 16 random bytes naming this ring for its whole life (kept across
    /// password changes): the key of its rollback high-water mark.
    public let ringID: [UInt8]
    /// How many times the file has been written; authenticated.
    public package(set) var generation: UInt64
    /// The ways in, each wrapping the same data key.
    public private(set) var slots: [KeySlot]
    private var dataKey: SymmetricKey

    /// The password KDF of the first password slot, or nil when only keys unlock the ring.
    public var kdf: PasswordKDF? { slots.lazy.compactMap(\.kdf).first }

    /// True when the password parameters are weaker than Coffer's current
    /// defaults: `upgrade(password:)` re-derives with the defaults.
    public var upgradeDue: Bool { kdf?.isBelowCurrentDefault ?? false }

    public var description: String { "KeyRingFile(\(keyRing), generation \(generation))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["keyRing": keyRing, "generation": generation], displayStyle: .struct)
    }

    var binding: [UInt8] { KeyRingFile.magic + ringID }

    /// A new file for `keyRing`, locked with `secret` (scrypt by default
    /// for a password), at generation 1.
    public init(keyRing: KeyRing, secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt) throws {
        self.keyRing = keyRing
        ringID = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        generation = 1
        dataKey = SymmetricKey(size: .bits256)
        slots = []
        slots = [try KeySlot.wrap(dataKey, for: secret, kdf: kdf, binding: binding)]
    }

    init(keyRing: KeyRing, ringID: [UInt8], generation: UInt64, slots: [KeySlot], dataKey: SymmetricKey) {
        self.keyRing = keyRing
        self.ringID = ringID
        self.generation = generation
        self.slots = slots
        self.dataKey = dataKey
    }

    /// The ring id and generation stored in a file, read without any
    /// secret (nil when the bytes are not a key ring). Not authenticated
    /// until the file is opened.
    public static func peekGeneration(_ contents: some DataProtocol) -> (ringID: [UInt8], generation: UInt64)? {
        let bytes = Array(contents.prefix(80))
        if bytes.count >= 28, Array(bytes.prefix(4)) == magic {
            return (Array(bytes[4..<20]), bytes[20..<28].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        }
        guard let layout = try? LegacyLayout(bytes) else { return nil }
        return (layout.ringID(bytes), layout.generation(bytes))
    }

    /// Reads and unlocks a key ring file. Parameters above the caps are
    /// refused before any work; a wrong secret is `wrongPassword`; a
    /// changed body is `payloadAuthenticationFailed`.
    public init(contents: some DataProtocol, secret: UnlockSecret) throws {
        let bytes = Array(contents)
        guard bytes.count <= 1 << 20 else { throw CofferError(.malformed, "a key ring file is at most 1 MiB") }
        guard bytes.count >= 4, Array(bytes.prefix(4)) == KeyRingFile.magic else {
            self = try KeyRingFile.readLegacy(bytes, secret: secret)
            return
        }
        guard bytes.count >= 29 else { throw CofferError(.malformed, "the key ring file is truncated") }
        let ringID = Array(bytes[4..<20])
        let generation = bytes[20..<28].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let count = Int(bytes[28])
        guard (1...KeyRingFile.maximumSlots).contains(count) else {
            throw CofferError(
                .malformed,
                "the key ring file declares \(count) key slots; 1 to \(KeyRingFile.maximumSlots) are read (refused before any work)"
            )
        }
        var rest = bytes[29...]
        var slots: [KeySlot] = []
        for _ in 0..<count { slots.append(try KeySlot.read(from: &rest)) }
        guard rest.count >= 12 + 16 else { throw CofferError(.malformed, "the key ring file is truncated") }
        let header = Array(bytes[..<rest.startIndex])
        let (dataKey, _) = try KeySlot.unwrap(slots, with: secret, binding: KeyRingFile.magic + ringID)
        let body: Data
        do {
            body = try AES.GCM._SIV.open(
                AES.GCM._SIV.SealedBox(combined: rest), using: dataKey, authenticating: header)
        } catch {
            throw CofferError(
                .payloadAuthenticationFailed,
                "the key ring file was changed: its sealed body does not open under the right secret")
        }
        self.init(
            keyRing: try KeyRing.deserialize(Array(body)), ringID: ringID, generation: generation, slots: slots,
            dataKey: dataKey)
    }

    /// A newer copy of this same ring (another process rotated it), read
    /// with the data key this one already holds: no secret and no KDF run.
    /// A file of another ring, an older generation, or one whose secret was
    /// changed since (a new data key) is refused; open that one with its
    /// secret.
    public func reopened(_ contents: some DataProtocol) throws -> KeyRingFile {
        let bytes = Array(contents)
        guard bytes.count >= 29 + 28, bytes.count <= 1 << 20, Array(bytes.prefix(4)) == KeyRingFile.magic,
            Array(bytes[4..<20]) == ringID
        else { throw CofferError(.malformed, "the copy is not a version 3 file of the same key ring") }
        let generation = bytes[20..<28].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard generation >= self.generation else {
            throw CofferError(
                .refused,
                "the copy of the key ring is older (generation \(generation)) than the one open (\(self.generation))")
        }
        let count = Int(bytes[28])
        guard (1...KeyRingFile.maximumSlots).contains(count) else {
            throw CofferError(.malformed, "the key ring file declares \(count) key slots")
        }
        var rest = bytes[29...]
        var slots: [KeySlot] = []
        for _ in 0..<count { slots.append(try KeySlot.read(from: &rest)) }
        guard rest.count >= 12 + 16 else { throw CofferError(.malformed, "the key ring file is truncated") }
        let body: Data
        do {
            body = try AES.GCM._SIV.open(
                AES.GCM._SIV.SealedBox(combined: rest), using: dataKey, authenticating: bytes[..<rest.startIndex])
        } catch {
            throw CofferError(
                .refused, "the key ring's secret was changed since it was opened; open it again with the new secret")
        }
        return KeyRingFile(
            keyRing: try KeyRing.deserialize(Array(body)), ringID: ringID, generation: generation, slots: slots,
            dataKey: dataKey)
    }

    /// The file's bytes at the current generation, with a fresh nonce.
    public func contents() throws -> Data {
        var header = KeyRingFile.magic + ringID + withUnsafeBytes(of: generation.bigEndian, Array.init)
        header.append(UInt8(slots.count))
        for slot in slots { header += slot.serialized }
        let box = try AES.GCM._SIV.seal(
            keyRing.serialized(), using: dataKey, nonce: AES.GCM._SIV.Nonce(), authenticating: header)
        return Data(header) + box.combined
    }

    public mutating func update<T>(_ change: (inout KeyRing) throws -> T) rethrows -> T {
        try change(&keyRing)
    }

    /// Locks with a new secret (a new data key and a new salt; the default
    /// scrypt for a password unless `kdf` says otherwise), dropping every
    /// other slot, and in the same write adds a new primary key: whoever
    /// holds an old copy of the file and the old secret cannot open values
    /// sealed after the change. Values sealed before stay exposed to them
    /// until rewrapped and their key destroyed. Returns the new primary's id.
    @discardableResult
    public mutating func changeSecret(to secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt) throws -> UInt32 {
        let newKey = SymmetricKey(size: .bits256)
        let slot = try KeySlot.wrap(newKey, for: secret, kdf: kdf, binding: binding)
        let primary = try keyRing.rotate()
        (dataKey, slots) = (newKey, [slot])
        return primary
    }

    /// Adds a second way in (a recovery KEK beside a passphrase) wrapping
    /// the same data key. Up to eight slots.
    public mutating func addSlot(for secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt) throws {
        guard slots.count < KeyRingFile.maximumSlots else {
            throw CofferError(.invalidArgument, "a key ring holds at most \(KeyRingFile.maximumSlots) key slots")
        }
        slots.append(try KeySlot.wrap(dataKey, for: secret, kdf: kdf, binding: binding))
    }

    /// The index of the first slot `secret` opens. A secret of the wrong
    /// kind for every slot is `invalidArgument`; one that opens none is
    /// `wrongPassword`. Each password slot tried costs one KDF run.
    public func slotIndex(openedBy secret: UnlockSecret) throws -> Int {
        let (_, index) = try KeySlot.unwrap(slots, with: secret, binding: binding)
        return index
    }

    /// Removes slot `index` (the data key stays: a slot that was never
    /// exposed goes; a secret that leaked calls for ``changeSecret(to:kdf:)``,
    /// since whoever holds it and an old copy of the file has the data key).
    /// The last slot is never removed.
    public mutating func removeSlot(at index: Int) throws {
        guard slots.indices.contains(index) else {
            throw CofferError(.invalidArgument, "there is no key slot \(index) (the slots are 0 to \(slots.count - 1))")
        }
        guard slots.count > 1 else {
            throw CofferError(.refused, "slot \(index) is the only key slot: nothing would open the key ring")
        }
        slots.remove(at: index)
    }

    /// Wraps the same data key for `new` in place of the slot `old` opens
    /// (a key server's key moved to its current version, a KEK moved to
    /// another keychain), keeping every other slot. Returns the slot's index.
    @discardableResult
    public mutating func replaceSlot(
        openedBy old: UnlockSecret, with new: UnlockSecret, kdf: PasswordKDF = .defaultScrypt
    ) throws -> Int {
        let index = try slotIndex(openedBy: old)
        slots[index] = try KeySlot.wrap(dataKey, for: new, kdf: kdf, binding: binding)
        return index
    }

    /// Re-derives the password slots that `secret` opens with the current
    /// defaults of the same kind (same password, new salts). A key opens
    /// no password slot, so nothing changes for one.
    public mutating func upgrade(_ secret: UnlockSecret) throws {
        guard secret.isPassword else { return }
        for index in slots.indices {
            guard let kdf = slots[index].kdf, (try? slots[index].unwrap(with: secret, binding: binding)) != nil else {
                continue
            }
            let target: PasswordKDF = if case .pbkdf2SHA256 = kdf { .defaultPBKDF2 } else { .defaultScrypt }
            slots[index] = try KeySlot.wrap(dataKey, for: secret, kdf: target, binding: binding)
        }
    }
}
