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
        guard let tenant, !tenant.isNull else { throw Self.unnamedTenant(table, field: field) }
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

    /// A record of a table kept per tenant that names none.
    static func unnamedTenant(_ table: StoreSchema.Table, field: String) -> CofferError {
        CofferError(.invalidArgument, "\(table.name) is kept per tenant: every record names its \(field)")
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

    /// What a write of `tenants` (one per record) to `table`, a table kept
    /// per tenant, seals under: each distinct tenant's key row read (500 a
    /// statement, held as a write holds them) but not yet opened, so that
    /// the records' sealers open them on every core; the rows of those
    /// that had none made here first, one by one (they write).
    func tenantsWriting(
        _ tenants: [StoreValue], to table: StoreSchema.Table, _ db: any StoreConnection, changes: RecordSetChanges?
    ) throws -> TenantWrite {
        var write = TenantWrite()
        write.slots.reserveCapacity(tenants.count)
        var slotOf: [[UInt8]: Int] = [:]
        for tenant in tenants {
            let name = tenant.encoded
            if let slot = slotOf[name] {
                write.slots.append(slot)
                continue
            }
            if tenant.isNull { throw Self.unnamedTenant(table, field: table.tenant ?? "") }
            slotOf[name] = write.tenants.count
            write.slots.append(write.tenants.count)
            write.tenants.append(.init(value: tenant, name: .init(table: table.name, tenant: name)))
        }
        for start in stride(from: 0, to: write.tenants.count, by: 500) {
            let chunk = write.tenants[start..<min(write.tenants.count, start + 500)]
            let rows = try db.rows(
                "SELECT tenant, keys FROM \(TenantKeys.table) WHERE tbl = ? AND tenant IN (\(chunk.map { _ in "?" }.joined(separator: ", ")))"
                    + (db.dialect == .postgres ? " FOR SHARE" : ""),
                [table.name.databaseValue] + chunk.map { Data($0.name.tenant).databaseValue })
            for row in rows {
                guard case .blob(let tenant) = row["tenant"]?.storage, case .blob(let sealed) = row["keys"]?.storage,
                    let slot = slotOf[Array(tenant)]
                else { continue }
                write.tenants[slot].sealed = Array(sealed)
            }
        }
        for slot in write.tenants.indices where write.tenants[slot].sealed == nil {
            write.tenants[slot].opened = try keys(
                for: table, tenant: write.tenants[slot].value, db, creating: true, changes: changes)
        }
        return write
    }
}

/// The tenants of one write (``StoreState/tenantsWriting(_:to:_:changes:)``):
/// each distinct one with its key row as read (or its keys, made by this
/// write), and each record's place among them.
struct TenantWrite: Sendable {
    struct Tenant: Sendable {
        let value: StoreValue
        let name: TenantKeyCache.Name
        var sealed: [UInt8]?
        var opened: StoreKeys?
    }

    var tenants: [Tenant] = []
    /// Per record, its tenant's place in ``tenants``.
    var slots: [Int] = []
}

/// Each tenant's sealer for one write, made from its keys when a record of
/// that tenant is first sealed, on whichever core seals it: the tenants'
/// keys opened and their index keys derived in parallel, not before the
/// sealing starts. Tenants at the same index version share one plan.
final class TenantSealers: Sendable {
    private let write: TenantWrite
    private let state: StoreState
    private let table: StoreSchema.Table
    private let made: Locked<(sealers: [RowSealer?], plans: [UInt16: RowSealer])>

    init(_ write: TenantWrite, state: StoreState, table: StoreSchema.Table) {
        self.write = write
        self.state = state
        self.table = table
        made = Locked((Array(repeating: nil, count: write.tenants.count), [:]))
    }

    /// The sealer of the record at `slot` of the write.
    func sealer(_ slot: Int) throws -> RowSealer {
        if let known = made.withLock({ $0.sealers[slot] }) { return known }
        let tenant = write.tenants[slot]
        let keys =
            try tenant.opened ?? state.opened(tenant.sealed!, tenant.name, table: table, tenant: tenant.value)
        let plan = made.withLock { $0.plans[keys.currentIndexVersion] }
        let sealer =
            try plan?.rekeyed(keys)
            ?? RowSealer(
                keys: keys, table: table, fields: table.fields.filter(\.sealed), version: keys.currentIndexVersion,
                state: state)
        made.withLock {
            $0.sealers[slot] = sealer
            if $0.plans[keys.currentIndexVersion] == nil { $0.plans[keys.currentIndexVersion] = sealer }
        }
        return sealer
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
