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
    static func sealNew(table: String, tenant: [UInt8], under store: StoreKeys) throws -> Data {
        try seal(.random(), table: table, tenant: tenant, under: store)
    }

    /// A tenant's keys, sealed for its row.
    static func seal(_ set: TenantKeySet, table: String, tenant: [UInt8], under store: StoreKeys) throws -> Data {
        var plain = set.encoded()
        defer { plain.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        return try store.keyRing.seal(
            plain, context: try context(storeID: store.storeID, table: table, tenant: tenant))
    }

    /// The tombstone a shred leaves, sealed.
    static func sealTombstone(table: String, tenant: [UInt8], under store: StoreKeys) throws -> Data {
        try store.keyRing.seal(
            [0] + withUnsafeBytes(of: TenantKeySet.now().bigEndian, Array.init),
            context: try context(storeID: store.storeID, table: table, tenant: tenant))
    }

    /// A tenant's row opened under the store's keys; one that does not
    /// open, or holds neither shape, was written without the store's keys.
    static func open(_ sealed: [UInt8], table: String, tenant: [UInt8], name: String, under store: StoreKeys) throws
        -> Opened
    {
        guard let set = try openSet(sealed, table: table, tenant: tenant, name: name, under: store) else {
            return .shredded
        }
        return .live(try set.storeKeys(storeID: store.storeID))
    }

    /// A tenant's row's keys, or nil for a tombstone.
    static func openSet(_ sealed: [UInt8], table: String, tenant: [UInt8], name: String, under store: StoreKeys)
        throws -> TenantKeySet?
    {
        let refused = CofferError(
            .stateAuthenticationFailed,
            "the keys of tenant \(name) of \(table) were changed without the store's keys (coffer_tenant_keys)")
        guard
            var plain = try? Array(
                store.keyRing.open(sealed, context: try context(storeID: store.storeID, table: table, tenant: tenant)))
        else { throw refused }
        defer { plain.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        if plain.count == 9 && plain[0] == 0 { return nil }
        guard let set = TenantKeySet(decoding: plain) else { throw refused }
        return set
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

extension StoreState {
    /// The keys the cells and index values of `table`'s records of tenant
    /// `tenant` are under: the store's own for a table without tenants;
    /// for one with, the tenant's, read from `db` (made there first when
    /// `creating` and it has none; nil when it has none and not
    /// `creating`). A shredded tenant's are `keyNotFound`.
    /// A key row made here is counted in `changes` (the key rows' record set).
    func keys(
        for table: StoreSchema.Table, tenant: StoreValue?, _ db: (any StoreConnection)?, creating: Bool = false,
        changes: RecordSetChanges? = nil
    ) throws -> StoreKeys? {
        guard let field = table.tenant else { return keys }
        guard let tenant, !tenant.isNull else {
            throw CofferError(.invalidArgument, "\(table.name) is kept per tenant: every record names its \(field)")
        }
        guard let db else {
            throw CofferError(
                .refused, "this job does not run over \(table.name), whose records are sealed under each tenant's keys")
        }
        let name = TenantKeyCache.Name(table: table.name, tenant: tenant.encoded)
        // A write holds the row while it writes (PostgreSQL: FOR SHARE), so
        // a shred waits for it, and a write after a shred sees the tombstone.
        let select =
            "SELECT keys FROM \(TenantKeys.table) WHERE tbl = ? AND tenant = ?"
            + (creating && db.dialect == .postgres ? " FOR SHARE" : "")
        let arguments = [table.name.databaseValue, Data(name.tenant).databaseValue]
        var sealed = try db.data(select, arguments)
        if sealed == nil, creating {
            // Many first writes at once make one set: the first insert wins,
            // the others read what it wrote.
            let made = try TenantKeys.sealNew(table: table.name, tenant: name.tenant, under: keys)
            let inserted = try db.execute(
                "INSERT INTO \(TenantKeys.table) (tbl, tenant, keys) VALUES (?, ?, ?) ON CONFLICT (tbl, tenant) DO NOTHING",
                arguments + [made.databaseValue])
            if inserted > 0 {
                changes?.add(
                    try TenantKeys.element(table: table.name, tenant: name.tenant, keys: made, state: self),
                    to: TenantKeys.table)
            }
            sealed = try db.data(select, arguments)
        }
        guard let sealed else { return nil }
        return try opened(Array(sealed), name, tenant: tenant)
    }

    /// A tenant's stored keys opened (or found in the cache, opened from the
    /// same bytes); a shredded tenant's are `keyNotFound`.
    func opened(_ sealed: [UInt8], _ name: TenantKeyCache.Name, tenant: StoreValue) throws -> StoreKeys {
        if let known = tenantCache.keys(name, sealed: sealed) { return known }
        switch try TenantKeys.open(
            sealed, table: name.table, tenant: name.tenant, name: TenantKeys.display(tenant), under: keys)
        {
        case .shredded:
            tenantCache.forget(name)
            throw TenantKeys.shredded(TenantKeys.display(tenant), table: name.table)
        case .live(let opened):
            tenantCache.keep(opened, name, sealed: sealed)
            return opened
        }
    }

    /// The keys of every one of `tenants` of `table` (a table kept per
    /// tenant) for a write, by encoded tenant: their rows read 500 a
    /// statement (held as a write holds them), those missing made one by one.
    func keys(
        for table: StoreSchema.Table, writing tenants: [StoreValue], _ db: any StoreConnection,
        changes: RecordSetChanges?
    ) throws -> [[UInt8]: StoreKeys] {
        var wanted: [[UInt8]: StoreValue] = [:]
        for tenant in tenants where !tenant.isNull { wanted[tenant.encoded] = tenant }
        var found: [[UInt8]: StoreKeys] = [:]
        let names = Array(wanted.keys)
        for start in stride(from: 0, to: names.count, by: 500) {
            let chunk = names[start..<min(names.count, start + 500)]
            let rows = try db.rows(
                "SELECT tenant, keys FROM \(TenantKeys.table) WHERE tbl = ? AND tenant IN (\(chunk.map { _ in "?" }.joined(separator: ", ")))"
                    + (db.dialect == .postgres ? " FOR SHARE" : ""),
                [table.name.databaseValue] + chunk.map { Data($0).databaseValue })
            for row in rows {
                guard case .blob(let tenant) = row["tenant"]?.storage, case .blob(let sealed) = row["keys"]?.storage,
                    let value = wanted[Array(tenant)]
                else { continue }
                let name = TenantKeyCache.Name(table: table.name, tenant: Array(tenant))
                found[name.tenant] = try opened(Array(sealed), name, tenant: value)
            }
        }
        for (name, tenant) in wanted where found[name] == nil {
            found[name] = try keys(for: table, tenant: tenant, db, creating: true, changes: changes)
        }
        return found
    }
}

/// Tenants' keys looked up ahead (``StoreState/tenantKeys(of:table:_:)``)
/// for rows opened off the connection, on several cores: by the tenant's
/// encoded value, its keys or why it has none.
typealias ResolvedTenantKeys = [[UInt8]: Result<StoreKeys, CofferError>]

extension StoreState {
    /// The keys of every tenant among `rows` of `table` (none for a table
    /// without tenants), looked up through `db`.
    func tenantKeys(of rows: [[String: DatabaseValue]], table: StoreSchema.Table, _ db: any StoreConnection) throws
        -> ResolvedTenantKeys
    {
        guard let name = table.tenant, let field = table.field(name) else { return [:] }
        var resolved: ResolvedTenantKeys = [:]
        for row in rows {
            let tenant = try StoreSQL.storeValue(row[name] ?? .null, for: field, table: table.name)
            guard resolved[tenant.encoded] == nil else { continue }
            do {
                guard let found = try keys(for: table, tenant: tenant, db) else {
                    resolved[tenant.encoded] = .failure(TenantKeys.missing(tenant, table: table.name))
                    continue
                }
                resolved[tenant.encoded] = .success(found)
            } catch let error as CofferError {
                resolved[tenant.encoded] = .failure(error)
            }
        }
        return resolved
    }
}
