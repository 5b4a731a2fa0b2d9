import Coffer
import Crypto
import Foundation
import GRDB

/// Each tenant's keys (docs/store.md, "Tenants"): one row of
/// `coffer_tenant_keys` per table and tenant, made at the tenant's first
/// write. Its `keys` are sealed under the store's key ring with the store
/// id, the table and the tenant's encoded value bound in, so a row copied
/// over another tenant's, another table's or another store's does not
/// open. Opened, they hold
///
///     0x01 ‖ key id (4) ‖ created (8, seconds) ‖ data key (32) ‖ index root (32)
///
/// — random, never derived from anything shared — or, once the tenant is
/// shredded, a tombstone `0x00 ‖ shredded (8, seconds)`, so a tenant's
/// erasure is a sealed fact of the state and not the absence of a row.
enum TenantKeys {
    static let table = "coffer_tenant_keys"

    static func createTable(_ dialect: StoreDialect) -> String {
        "CREATE TABLE IF NOT EXISTS \(table) (tbl TEXT NOT NULL, tenant \(dialect.bytes) NOT NULL, keys \(dialect.bytes) NOT NULL, PRIMARY KEY (tbl, tenant))\(dialect.strict)"
    }

    /// What a tenant's row holds.
    enum Opened: Sendable {
        case live(StoreKeys)
        case shredded
    }

    static func context(storeID: [UInt8], table: String, tenant: [UInt8]) throws -> SealingContext {
        try SealingContext(parts: [Array("coffer store v1 tenant keys".utf8), storeID, Array(table.utf8), tenant])
    }

    /// A new tenant's keys, sealed: a data key and an index root of its own.
    static func sealNew(table: String, tenant: [UInt8], under store: StoreKeys, held: HeldTenant?) throws -> Data {
        try seal(.random(), table: table, tenant: tenant, under: store, held: held)
    }

    /// A tenant's keys, sealed for its row: under the store's ring, and
    /// first, for a table whose keys are held, under the holder's current
    /// key for the tenant (``TenantKeyHolder``):
    ///
    ///     0x03 ‖ held key's version (4) ‖ sealed under it (a one-key ring: id = version)
    static func seal(_ set: TenantKeySet, table: String, tenant: [UInt8], under store: StoreKeys, held: HeldTenant?)
        throws -> Data
    {
        var plain = set.encoded()
        defer { plain.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        if let held {
            let key = try held.holder.currentKey(tenant: held.subject)
            let inner = try KeyRing(keys: [(key.key, key.version, 0)]).seal(
                plain, context: try heldContext(storeID: store.storeID, table: table, tenant: tenant))
            plain.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
            plain = [3] + withUnsafeBytes(of: key.version.bigEndian, Array.init) + Array(inner)
        }
        return try store.keyRing.seal(
            plain, context: try context(storeID: store.storeID, table: table, tenant: tenant))
    }

    static func heldContext(storeID: [UInt8], table: String, tenant: [UInt8]) throws -> SealingContext {
        try SealingContext(parts: [Array("coffer store v1 held tenant keys".utf8), storeID, Array(table.utf8), tenant])
    }

    /// The tombstone a shred leaves, sealed.
    static func sealTombstone(table: String, tenant: [UInt8], under store: StoreKeys) throws -> Data {
        try store.keyRing.seal(
            [0] + withUnsafeBytes(of: TenantKeySet.now().bigEndian, Array.init),
            context: try context(storeID: store.storeID, table: table, tenant: tenant))
    }

    /// Whether a tenant's row is a tombstone, read under the store's ring
    /// alone (a held row's keys are not asked of their holder).
    static func isTombstone(_ sealed: [UInt8], table: String, tenant: [UInt8], name: String, under store: StoreKeys)
        throws -> Bool
    {
        var plain = try outer(sealed, table: table, tenant: tenant, name: name, under: store)
        defer { plain.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        return plain.count == 9 && plain[0] == 0
    }

    static func outer(_ sealed: [UInt8], table: String, tenant: [UInt8], name: String, under store: StoreKeys) throws
        -> [UInt8]
    {
        guard
            let plain = try? Array(
                store.keyRing.open(sealed, context: try context(storeID: store.storeID, table: table, tenant: tenant)))
        else { throw refused(name, table: table) }
        return plain
    }

    static func refused(_ name: String, table: String) -> CofferError {
        CofferError(
            .stateAuthenticationFailed,
            "the keys of tenant \(name) of \(table) were changed without the store's keys (coffer_tenant_keys)")
    }

    /// A tenant's row opened under the store's keys (and its holder's, when
    /// held); one that does not open, or holds no known shape, was written
    /// without the store's keys.
    static func open(
        _ sealed: [UInt8], table: String, tenant: [UInt8], name: String, under store: StoreKeys, held: HeldTenant?
    ) throws -> Opened {
        guard let set = try openSet(sealed, table: table, tenant: tenant, name: name, under: store, held: held) else {
            return .shredded
        }
        return .live(try set.storeKeys(storeID: store.storeID))
    }

    /// A tenant's row's keys, or nil for a tombstone.
    static func openSet(
        _ sealed: [UInt8], table: String, tenant: [UInt8], name: String, under store: StoreKeys, held: HeldTenant?
    ) throws -> TenantKeySet? {
        var plain = try outer(sealed, table: table, tenant: tenant, name: name, under: store)
        defer { plain.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        if plain.count == 9 && plain[0] == 0 { return nil }
        if plain.first == 3 {
            guard plain.count > 5 else { throw refused(name, table: table) }
            guard let held else { throw noHolder(table) }
            let version = plain[1..<5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let key: HeldTenantKey
            do {
                key = try held.holder.key(tenant: held.subject, version: version)
            } catch let error as CofferError where error.code == .keyNotFound {
                throw CofferError(
                    .keyNotFound,
                    "tenant \(name) of \(table) was shredded at \(held.holder.location): its cells never open again, from this database or any backup of it"
                )
            }
            guard
                var inner = try? Array(
                    KeyRing(keys: [(key.key, version, 0)]).open(
                        plain[5...], context: try heldContext(storeID: store.storeID, table: table, tenant: tenant)))
            else {
                throw CofferError(
                    .keyNotFound,
                    "the key \(held.holder.location) holds for tenant \(name) of \(table) does not open its keys: that key was destroyed (and made again), or the holder is not this store's"
                )
            }
            defer { inner.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
            guard let set = TenantKeySet(decoding: inner) else { throw refused(name, table: table) }
            return set
        }
        guard let set = TenantKeySet(decoding: plain) else { throw refused(name, table: table) }
        return set
    }

    static func noHolder(_ table: String) -> CofferError {
        CofferError(
            .keyHolderUnavailable,
            "the keys of \(table)'s tenants are held outside the database: open the store with their holder (RecordStore.holdTenantKeys(at:); coffer store … --tenant-keys-server URL --tenant-keys-token-file FILE)"
        )
    }

    /// A tenant as its holder names it: its text, or an integer in decimal.
    static func subject(_ tenant: StoreValue) throws -> String {
        switch tenant.storage {
        case .text(let text): return text
        case .integer(let number): return String(number)
        default: throw CofferError(.invalidArgument, "a tenant is a text or an integer")
        }
    }

    /// Seals every tenant's row again under the ring's primary key (the
    /// end of a rotation, before the older keys are disabled), 500 rows a
    /// statement.
    static func rewrapAll(_ db: any StoreConnection, state: StoreState, changes: RecordSetChanges) throws {
        let keys = state.keys
        guard try db.tableExists(table) else { return }
        var after: [DatabaseValue]?
        while true {
            let rows = try db.rows(
                "SELECT tbl, tenant, keys FROM \(table)"
                    + (after == nil ? "" : " WHERE (tbl, tenant) > (?, ?)") + " ORDER BY tbl, tenant LIMIT 500",
                after ?? [])
            guard let last = rows.last else { return }
            after = [last["tbl"] ?? .null, last["tenant"] ?? .null]
            for row in rows {
                guard case .string(let name) = row["tbl"]?.storage, case .blob(let tenant) = row["tenant"]?.storage,
                    case .blob(let sealed) = row["keys"]?.storage
                else {
                    throw CofferError(.stateAuthenticationFailed, "a row of \(table) was not written by the store")
                }
                let rewrapped = try keys.keyRing.rewrap(
                    sealed, context: try context(storeID: keys.storeID, table: name, tenant: Array(tenant)))
                try db.execute(
                    "UPDATE \(table) SET keys = ? WHERE tbl = ? AND tenant = ?",
                    [rewrapped.databaseValue, name.databaseValue, Data(tenant).databaseValue])
                changes.replace(
                    try element(table: name, tenant: Array(tenant), keys: sealed, state: state),
                    with: try element(table: name, tenant: Array(tenant), keys: rewrapped, state: state), in: table)
            }
        }
    }

    /// A tenant as errors name it: a clear value, so shown as it is.
    static func display(_ tenant: StoreValue) -> String {
        if case .text(let text) = tenant.storage { return "\"\(text)\"" }
        return tenant.indexText ?? tenant.kindName
    }

    static func missing(_ tenant: StoreValue, table: String) -> CofferError {
        CofferError(
            .stateAuthenticationFailed,
            "the keys of tenant \(display(tenant)) of \(table) are missing: they were removed without the store's keys")
    }

    static func shredded(_ name: String, table: String) -> CofferError {
        CofferError(
            .keyNotFound, "tenant \(name) of \(table) was shredded: its keys are gone, and its cells never open again")
    }
}
