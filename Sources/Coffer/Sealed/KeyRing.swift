import Crypto
import CryptoExtras
import Foundation

/// Data keys with ids and states. `seal` uses the primary key; `open`
/// finds a value's key by the id in the value; `rotate` adds a new primary
/// (the old one stays active, so its values still open); `disable` makes
/// a key's values fail with `keyDisabled`; `destroy` removes a disabled
/// key's bytes; `rewrap` re-seals a value under the primary without
/// handing its plaintext to the caller.
///
/// `disable` is a policy switch of this ring, not revocation: whoever
/// holds an older copy of the ring file and its secret still has the key.
/// `destroy` removes the bytes from every copy written afterwards, and the
/// rollback guard (``KeyRingStore``) keeps an older copy from being put
/// back in its place.
///
/// Key bytes never appear in `description`, `dump` output or errors.
///
/// ```swift
/// var ring = KeyRing()
/// let context = Data("cards/42/number".utf8)      // where the value lives: it opens nowhere else
/// let sealed = try ring.seal(Data("4111 1111 1111 1111".utf8), context: context)
/// let newKey = try ring.rotate()                  // new values seal under newKey; sealed still opens
/// let number = try ring.open(sealed, context: context)
/// let moved = try ring.rewrap(sealed, context: context)  // now under newKey, never handed out in the clear
/// ```
public struct KeyRing: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public enum State: UInt8, Sendable, CustomStringConvertible {
        case primary = 1
        case active = 2
        case disabled = 3
        public var description: String { self == .primary ? "primary" : self == .active ? "active" : "disabled" }
    }

    /// What may be shown about a key.
    public struct KeyInfo: Sendable, Equatable {
        public let id: UInt32
        public let state: State
        public let created: Date
    }

    struct Entry: Sendable {
        var id: UInt32
        var state: State
        var created: UInt64
        let key: SymmetricKey
    }

    private(set) var entries: [Entry]
    static let maximumKeys = 4096

    /// A new key ring with one primary key.
    public init() {
        entries = []
        entries.append(KeyRing.newEntry(state: .primary, avoiding: []))
    }

    init(entries: [Entry]) { self.entries = entries }

    /// A key ring of the keys given, the first primary and the others
    /// active (a tenant's keys in the middle of its rotation).
    package init(keys: [(key: SymmetricKey, id: UInt32, created: UInt64)]) throws {
        guard !keys.isEmpty, keys.count <= Self.maximumKeys, Set(keys.map(\.id)).count == keys.count,
            keys.allSatisfy({ $0.id != 0 && $0.key.bitCount == 256 })
        else {
            throw CofferError(.invalidArgument, "a key ring's keys are 32 bytes with distinct ids other than 0")
        }
        entries = keys.enumerated().map {
            Entry(
                id: $0.element.id, state: $0.offset == 0 ? .primary : .active, created: $0.element.created,
                key: $0.element.key)
        }
    }

    static func newEntry(state: State, avoiding ids: Set<UInt32>) -> Entry {
        var id = UInt32.random(in: 1 ... .max)
        while ids.contains(id) { id = UInt32.random(in: 1 ... .max) }
        return Entry(
            id: id, state: state, created: UInt64(Date().timeIntervalSince1970), key: SymmetricKey(size: .bits256))
    }

    public var keys: [KeyInfo] {
        entries.map {
            KeyInfo(id: $0.id, state: $0.state, created: Date(timeIntervalSince1970: TimeInterval($0.created)))
        }
    }

    public var primaryID: UInt32 { entries.first { $0.state == .primary }!.id }

    public var description: String {
        "KeyRing(\(entries.count) key\(entries.count == 1 ? "" : "s"), primary \(String(format: "%08x", primaryID)))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["keys": keys], displayStyle: .struct) }

    /// Adds a new primary key; the old primary stays active. Returns the new id.
    ///
    /// ```swift
    /// let newKey = try store.modify { file in try file.update { try $0.rotate() } }
    /// ```
    @discardableResult
    public mutating func rotate() throws -> UInt32 {
        guard entries.count < KeyRing.maximumKeys else {
            throw CofferError(.invalidArgument, "the key ring already holds \(KeyRing.maximumKeys) keys")
        }
        for index in entries.indices where entries[index].state == .primary { entries[index].state = .active }
        let entry = KeyRing.newEntry(state: .primary, avoiding: Set(entries.map(\.id)))
        entries.append(entry)
        return entry.id
    }

    /// Disables a key: values sealed under it fail with `keyDisabled`.
    /// The primary cannot be disabled; rotate first.
    public mutating func disable(_ id: UInt32) throws {
        guard let index = entries.firstIndex(where: { $0.id == id }) else {
            throw CofferError(.keyNotFound, "the key ring has no key \(String(format: "%08x", id))")
        }
        guard entries[index].state != .primary else {
            throw CofferError(
                .invalidArgument, "key \(String(format: "%08x", id)) is the primary; rotate first, then disable it")
        }
        entries[index].state = .disabled
    }

    /// Makes a disabled key active again: values sealed under it open once
    /// more (a database restored from before a rotation, whose values the
    /// rotation's rewrap never reached). Only a disabled key can be enabled.
    public mutating func enable(_ id: UInt32) throws {
        guard let index = entries.firstIndex(where: { $0.id == id }) else {
            throw CofferError(.keyNotFound, "the key ring has no key \(String(format: "%08x", id))")
        }
        guard entries[index].state == .disabled else {
            throw CofferError(
                .invalidArgument,
                "key \(String(format: "%08x", id)) is \(entries[index].state); only a disabled key can be enabled")
        }
        entries[index].state = .active
    }

    /// Removes a disabled key and its bytes from the ring: values sealed
    /// under it never open again, with any copy of the ring written from
    /// now on. Only a disabled key can be destroyed, and only when the
    /// caller states that no value sealed under it remains
    /// (`noValuesRemain`, after rewrapping them) or insists (`force`).
    public mutating func destroy(_ id: UInt32, noValuesRemain: Bool = false, force: Bool = false) throws {
        guard let index = entries.firstIndex(where: { $0.id == id }) else {
            throw CofferError(.keyNotFound, "the key ring has no key \(String(format: "%08x", id))")
        }
        guard entries[index].state == .disabled else {
            throw CofferError(
                .invalidArgument,
                "key \(String(format: "%08x", id)) is \(entries[index].state); only a disabled key can be destroyed (disable it first)"
            )
        }
        guard noValuesRemain || force else {
            throw CofferError(
                .refused,
                "values sealed under key \(String(format: "%08x", id)) may remain and would never open again; rewrap them first, then say so, or force it"
            )
        }
        entries.remove(at: index)
    }

    /// Seals under the primary key, binding `context`.
    ///
    /// Inlinable so that it is specialised for the caller's byte types; the
    /// work is done by non-generic code behind it.
    @inlinable
    public func seal(_ plaintext: some DataProtocol, context: some DataProtocol) throws -> Data {
        try withContiguousBytes(of: plaintext, and: context) { try sealContiguous($0, context: $1) }
    }

    @usableFromInline
    func sealContiguous(_ plaintext: UnsafeRawBufferPointer, context: UnsafeRawBufferPointer) throws -> Data {
        let primary = entries.first { $0.state == .primary }!
        return try SealedValue.seal(plaintext, keyID: primary.id, key: primary.key, context: context)
    }

    /// Opens a value (binary form) sealed under any active key.
    @inlinable
    public func open(_ sealed: some DataProtocol, context: some DataProtocol) throws -> Data {
        try withContiguousBytes(of: sealed, and: context) { try openContiguous($0, context: $1) }
    }

    @usableFromInline
    func openContiguous(_ sealed: UnsafeRawBufferPointer, context: UnsafeRawBufferPointer) throws -> Data {
        let id = try SealedValue.keyID(of: sealed)
        guard let entry = entries.first(where: { $0.id == id }) else {
            throw CofferError(
                .keyNotFound,
                "the value was sealed under key \(String(format: "%08x", id)), which this key ring does not hold (wrong key ring?)"
            )
        }
        guard entry.state != .disabled else {
            throw CofferError(
                .keyDisabled, "the value was sealed under key \(String(format: "%08x", id)), which is disabled")
        }
        return try SealedValue.open(sealed, keyID: id, key: entry.key, context: context)
    }

    /// Re-seals a value under the primary key; the plaintext never leaves.
    public func rewrap(_ sealed: some DataProtocol, context: some DataProtocol) throws -> Data {
        try seal(try open(sealed, context: context), context: context)
    }

    // MARK: serialization (only ever inside the sealed key ring file)

    func serialized() -> [UInt8] {
        var bytes: [UInt8] = [UInt8(entries.count >> 8), UInt8(entries.count & 0xff)]
        for entry in entries {
            bytes += withUnsafeBytes(of: entry.id.bigEndian, Array.init)
            bytes.append(entry.state.rawValue)
            bytes += withUnsafeBytes(of: entry.created.bigEndian, Array.init)
            entry.key.withUnsafeBytes { bytes += $0 }
        }
        return bytes
    }

    static func deserialize(_ bytes: [UInt8]) throws -> KeyRing {
        let bad = CofferError(.malformed, "the key ring's contents are not well formed")
        guard bytes.count >= 2 else { throw bad }
        let count = Int(bytes[0]) << 8 | Int(bytes[1])
        let entrySize = 4 + 1 + 8 + 32
        guard count >= 1, count <= maximumKeys, bytes.count == 2 + count * entrySize else { throw bad }
        var entries: [Entry] = []
        var ids = Set<UInt32>()
        for index in 0..<count {
            let base = 2 + index * entrySize
            let id = bytes[base..<(base + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            guard let state = State(rawValue: bytes[base + 4]), ids.insert(id).inserted else { throw bad }
            let created = bytes[(base + 5)..<(base + 13)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            entries.append(
                Entry(
                    id: id, state: state, created: created,
                    key: SymmetricKey(data: bytes[(base + 13)..<(base + entrySize)])))
        }
        guard entries.filter({ $0.state == .primary }).count == 1 else { throw bad }
        return KeyRing(entries: entries)
    }
}
