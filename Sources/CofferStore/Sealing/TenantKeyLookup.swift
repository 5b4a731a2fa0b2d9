import Coffer
import Foundation
import GRDB

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
            let made = try TenantKeys.sealNew(
                table: table.name, tenant: name.tenant, under: keys, held: try held(table, tenant))
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
        return try opened(Array(sealed), name, table: table, tenant: tenant)
    }

    /// A tenant's stored keys opened (or found in the cache, opened from the
    /// same bytes; a held tenant's for at most the holder's lifetime); a
    /// shredded tenant's are `keyNotFound`.
    func opened(_ sealed: [UInt8], _ name: TenantKeyCache.Name, table: StoreSchema.Table, tenant: StoreValue) throws
        -> StoreKeys
    {
        if let known = tenantCache.keys(name, sealed: sealed) { return known }
        // Without a holder a held row is refused when opened, and a
        // tombstone still says the tenant was shredded.
        let held = tenantCache.holder == nil ? nil : try held(table, tenant)
        switch try TenantKeys.open(
            sealed, table: name.table, tenant: name.tenant, name: TenantKeys.display(tenant), under: keys, held: held)
        {
        case .shredded:
            tenantCache.forget(name)
            throw TenantKeys.shredded(TenantKeys.display(tenant), table: name.table)
        case .live(let opened):
            tenantCache.keep(opened, name, sealed: sealed, held: held != nil)
            return opened
        }
    }

    /// The holder of `table`'s tenants' keys and the tenant as it names
    /// it, for a table whose keys are held; nil for one whose are not.
    func held(_ table: StoreSchema.Table, _ tenant: StoreValue) throws -> HeldTenant? {
        guard table.tenantKeys == .holder else { return nil }
        guard let holder = tenantCache.holder else { throw TenantKeys.noHolder(table.name) }
        return HeldTenant(holder: holder, subject: try TenantKeys.subject(tenant))
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
                found[name.tenant] = try opened(Array(sealed), name, table: table, tenant: value)
            }
        }
        for (name, tenant) in wanted where found[name] == nil {
            found[name] = try keys(for: table, tenant: tenant, db, creating: true, changes: changes)
        }
        return found
    }
}

/// The holder a held tenant's keys are wrapped under, and the tenant as
/// the holder names it.
struct HeldTenant {
    let holder: any TenantKeyHolder
    let subject: String
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
