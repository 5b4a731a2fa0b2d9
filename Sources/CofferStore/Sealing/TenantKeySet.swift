import Coffer
import Crypto
import Foundation

/// A tenant's keys as they are sealed in its row (docs/store.md,
/// "Tenants"): its data keys, the primary first, and its index root.
///
///     one key:   0x01 ‖ id (4) ‖ created (8) ‖ key (32) ‖ index root (32)
///     several:   0x02 ‖ count (1) ‖ count × (id (4) ‖ created (8) ‖ key (32)) ‖ index root (32)
///
/// A tenant has several keys only while its rotation runs
/// (``RecordStore/rotateTenantKeys(_:tenant:batchSize:progress:)``).
struct TenantKeySet {
    struct Key {
        var id: UInt32
        var created: UInt64
        var key: SymmetricKey
    }

    var keys: [Key]
    var root: SymmetricKey

    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970) }

    /// A new tenant's: one data key and an index root, random.
    static func random() -> TenantKeySet {
        TenantKeySet(
            keys: [Key(id: UInt32.random(in: 1 ... .max), created: now(), key: SymmetricKey(size: .bits256))],
            root: SymmetricKey(size: .bits256))
    }

    /// With a new primary key before the others.
    func rotated() -> TenantKeySet {
        var id = UInt32.random(in: 1 ... .max)
        while keys.contains(where: { $0.id == id }) { id = UInt32.random(in: 1 ... .max) }
        return TenantKeySet(
            keys: [Key(id: id, created: Self.now(), key: SymmetricKey(size: .bits256))] + keys, root: root)
    }

    func encoded() -> [UInt8] {
        func append(_ key: Key, to bytes: inout [UInt8]) {
            bytes += withUnsafeBytes(of: key.id.bigEndian, Array.init)
            bytes += withUnsafeBytes(of: key.created.bigEndian, Array.init)
            bytes += key.key.withUnsafeBytes { Array($0) }
        }
        var bytes: [UInt8] = keys.count == 1 ? [1] : [2, UInt8(keys.count)]
        for key in keys { append(key, to: &bytes) }
        bytes += root.withUnsafeBytes { Array($0) }
        return bytes
    }

    /// The set `bytes` encode, or nil when they are not one.
    init?(decoding bytes: [UInt8]) {
        guard let first = bytes.first else { return nil }
        var count = 1
        var offset = 1
        if first == 2 {
            guard bytes.count > 1, (2...255).contains(Int(bytes[1])) else { return nil }
            count = Int(bytes[1])
            offset = 2
        } else if first != 1 {
            return nil
        }
        guard bytes.count == offset + count * 44 + 32 else { return nil }
        func integer(_ range: Range<Int>) -> UInt64 { bytes[range].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        keys = (0..<count).map { index in
            let start = offset + index * 44
            return Key(
                id: UInt32(integer(start..<start + 4)), created: integer(start + 4..<start + 12),
                key: SymmetricKey(data: bytes[start + 12..<start + 44]))
        }
        root = SymmetricKey(data: bytes[(bytes.count - 32)...])
    }

    init(keys: [Key], root: SymmetricKey) {
        self.keys = keys
        self.root = root
    }

    /// The keys as a store's: a ring of the data keys, the root as index version 1.
    func storeKeys(storeID: [UInt8]) throws -> StoreKeys {
        try StoreKeys(
            storeID: storeID, keyRing: try KeyRing(keys: keys.map { ($0.key, $0.id, $0.created) }),
            indexRoots: [1: root], current: 1)
    }
}
