import Coffer
import Crypto
import Foundation

/// A tenant's keys as they are sealed in its row (docs/store.md,
/// "Tenants"): its data keys, the primary first, and its index roots, the
/// current first.
///
///     one key, root 1:  0x01 ‖ id (4) ‖ created (8) ‖ key (32) ‖ index root (32)
///     several keys:     0x02 ‖ count (1) ‖ count × (id (4) ‖ created (8) ‖ key (32)) ‖ index root (32)
///     any roots:        0x04 ‖ count (1) ‖ count × (id ‖ created ‖ key) ‖ roots (1) ‖ roots × (version (2) ‖ root (32))
///
/// A tenant has several keys only while its rotation runs
/// (``RecordStore/rotateTenantKeys(_:tenant:batchSize:progress:)``), and
/// several roots only while its reindex runs
/// (``RecordStore/reindexTenant(_:tenant:batchSize:progress:)``); 0x01 and
/// 0x02 hold index root version 1.
struct TenantKeySet {
    struct Key {
        var id: UInt32
        var created: UInt64
        var key: SymmetricKey
    }

    struct Root {
        var version: UInt16
        var key: SymmetricKey
    }

    var keys: [Key]
    var roots: [Root]

    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970) }

    /// A new tenant's: one data key and an index root, random.
    static func random() -> TenantKeySet {
        TenantKeySet(
            keys: [Key(id: UInt32.random(in: 1 ... .max), created: now(), key: SymmetricKey(size: .bits256))],
            roots: [Root(version: 1, key: SymmetricKey(size: .bits256))])
    }

    /// With a new primary key before the others.
    func rotated() -> TenantKeySet {
        var id = UInt32.random(in: 1 ... .max)
        while keys.contains(where: { $0.id == id }) { id = UInt32.random(in: 1 ... .max) }
        return TenantKeySet(
            keys: [Key(id: id, created: Self.now(), key: SymmetricKey(size: .bits256))] + keys, roots: roots)
    }

    /// With a new current index root, its version one past the newest.
    func reindexed() throws -> TenantKeySet {
        guard let newest = roots.map(\.version).max(), newest < .max else {
            throw CofferError(.refused, "this tenant has used every index version")
        }
        return TenantKeySet(keys: keys, roots: [Root(version: newest + 1, key: SymmetricKey(size: .bits256))] + roots)
    }

    func encoded() -> [UInt8] {
        func append(_ key: Key, to bytes: inout [UInt8]) {
            bytes += withUnsafeBytes(of: key.id.bigEndian, Array.init)
            bytes += withUnsafeBytes(of: key.created.bigEndian, Array.init)
            bytes += key.key.withUnsafeBytes { Array($0) }
        }
        let plain = roots.count == 1 && roots[0].version == 1
        var bytes: [UInt8] = plain ? (keys.count == 1 ? [1] : [2, UInt8(keys.count)]) : [4, UInt8(keys.count)]
        for key in keys { append(key, to: &bytes) }
        if plain { return bytes + roots[0].key.withUnsafeBytes { Array($0) } }
        bytes.append(UInt8(roots.count))
        for root in roots {
            bytes += withUnsafeBytes(of: root.version.bigEndian, Array.init)
            bytes += root.key.withUnsafeBytes { Array($0) }
        }
        return bytes
    }

    /// The set `bytes` encode, or nil when they are not one.
    init?(decoding bytes: [UInt8]) {
        guard let first = bytes.first, [1, 2, 4].contains(first) else { return nil }
        var count = 1
        var offset = 1
        if first != 1 {
            guard bytes.count > 1, ((first == 2 ? 2 : 1)...255).contains(Int(bytes[1])) else { return nil }
            count = Int(bytes[1])
            offset = 2
        }
        func integer(_ range: Range<Int>) -> UInt64 { bytes[range].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        guard bytes.count >= offset + count * 44 else { return nil }
        keys = (0..<count).map { index in
            let start = offset + index * 44
            return Key(
                id: UInt32(integer(start..<start + 4)), created: integer(start + 4..<start + 12),
                key: SymmetricKey(data: bytes[start + 12..<start + 44]))
        }
        offset += count * 44
        if first != 4 {
            guard bytes.count == offset + 32 else { return nil }
            roots = [Root(version: 1, key: SymmetricKey(data: bytes[offset...]))]
            return
        }
        guard bytes.count > offset, bytes[offset] >= 1, bytes.count == offset + 1 + Int(bytes[offset]) * 34 else {
            return nil
        }
        roots = (0..<Int(bytes[offset])).map { index in
            let start = offset + 1 + index * 34
            return Root(
                version: UInt16(integer(start..<start + 2)), key: SymmetricKey(data: bytes[start + 2..<start + 34]))
        }
        guard Set(roots.map(\.version)).count == roots.count, Set(keys.map(\.id)).count == keys.count else {
            return nil
        }
    }

    init(keys: [Key], roots: [Root]) {
        self.keys = keys
        self.roots = roots
    }

    /// The keys as a store's: a ring of the data keys, the roots by version, the first current.
    func storeKeys(storeID: [UInt8]) throws -> StoreKeys {
        try StoreKeys(
            storeID: storeID, keyRing: try KeyRing(keys: keys.map { ($0.key, $0.id, $0.created) }),
            indexRoots: Dictionary(uniqueKeysWithValues: roots.map { ($0.version, $0.key) }),
            current: roots[0].version)
    }
}
