import Coffer
import Foundation
import GRDB

/// What ``RecordStore/rotateTenantKeys(_:tenant:batchSize:progress:)`` did.
public struct TenantRotation: Sendable, Equatable {
    /// The tenants whose data key was rotated.
    public var tenants: Int
    /// Their records gone through, and the sealed cells sealed again.
    public var rows: Int
    public var cells: Int
}

extension RecordStore {
    /// Gives `tenant` of `tableName` (a table kept per tenant) a new data
    /// key — or every live tenant of it, when `tenant` is nil — seals each
    /// of its cells again under it, `batchSize` records a transaction,
    /// then destroys the old key: a copy of the tenant's keys taken before
    /// opens nothing the tenant holds afterwards. Writers go on throughout
    /// (from the first step they seal under the new key). A run stopped
    /// anywhere (a kill, `progress` throwing) is finished by the next run:
    /// the tenant's row keeps both keys until every cell is under the new
    /// one, and cells already moved are passed over.
    @discardableResult
    public func rotateTenantKeys(
        _ tableName: String, tenant: StoreValue? = nil, batchSize: Int = 1000,
        progress: (StoreProgress) throws -> Void = { _ in }
    ) throws -> TenantRotation {
        try forEachTenant(tableName, tenant: tenant, batchSize: batchSize) { table, tenant, report in
            try rotate(table, tenant: tenant, batchSize: batchSize, report: &report, progress: progress)
        }
    }

    /// Runs `job` for `tenant` of `tableName` (a table kept per tenant),
    /// or for each of its live tenants in turn when `tenant` is nil.
    func forEachTenant(
        _ tableName: String, tenant: StoreValue?, batchSize: Int,
        _ job: (StoreSchema.Table, StoreValue, inout TenantRotation) throws -> Void
    ) throws -> TenantRotation {
        guard batchSize > 0 else { throw CofferError(.invalidArgument, "a batch holds at least one row") }
        let table = try schema.table(tableName)
        guard let name = table.tenant, let field = table.field(name) else {
            throw CofferError(.invalidArgument, "\(table.name) is not kept per tenant: it has no tenant keys")
        }
        let tenants = try tenant.map { [$0] } ?? liveTenants(of: table, field: field)
        var report = TenantRotation(tenants: 0, rows: 0, cells: 0)
        for tenant in tenants {
            try job(table, tenant, &report)
            report.tenants += 1
        }
        return report
    }

    /// The tenants of `table` with keys (not shredded), in order.
    func liveTenants(of table: StoreSchema.Table, field: StoreSchema.Field) throws -> [StoreValue] {
        try read { work in
            try work.db.rows(
                "SELECT tenant, keys FROM \(TenantKeys.table) WHERE tbl = ? ORDER BY tenant", [table.name.databaseValue]
            ).compactMap { row -> StoreValue? in
                guard case .blob(let encoded) = row["tenant"]?.storage, case .blob(let sealed) = row["keys"]?.storage
                else { return nil }
                let tenant = try StoreValue(encoded: encoded)
                let shredded = try TenantKeys.isTombstone(
                    Array(sealed), table: table.name, tenant: Array(encoded), name: TenantKeys.display(tenant),
                    under: work.state.keys)
                return shredded ? nil : tenant
            }
        }
    }

    /// One tenant's rotation: a new primary key beside the old ones, every
    /// cell under an old one sealed again, the old ones dropped.
    func rotate(
        _ table: StoreSchema.Table, tenant: StoreValue, batchSize: Int, report: inout TenantRotation,
        progress: (StoreProgress) throws -> Void
    ) throws {
        let primary = try changeTenantKeys(table, tenant: tenant) { $0.keys.count == 1 ? $0.rotated() : $0 }.keys[0].id
        let sealed = table.fields.filter(\.sealed)
        try eachBatch(of: table, tenant: tenant, indexes: false, batchSize: batchSize, report: &report, progress) {
            work, rows, keys in
            let (db, state) = (work.db, work.state)
            work.changes?.reserve(table.name, db)
            var cells = 0
            for row in rows {
                var changed: [String: DatabaseValue] = [:]
                for field in sealed {
                    guard case .blob(let cell) = (row[field.name] ?? .null).storage,
                        try SealedValue.keyID(of: cell) != primary
                    else { continue }
                    let context = try state.cellContext(field, table: table, row: row)
                    changed[field.name] = try keys.keyRing.rewrap(cell, context: context).databaseValue
                }
                guard !changed.isEmpty else { continue }
                let names = changed.keys.sorted()
                // Only over the cells as read: a writer that changed the
                // record meanwhile sealed it under the new key already.
                let unchanged = [table.primaryKey, StoreSQL.lifeColumn] + names
                guard
                    try db.execute(
                        "UPDATE \(StoreSQL.quoted(table.name)) SET \(names.map { StoreSQL.quoted($0) + " = ?" }.joined(separator: ", ")) WHERE \(unchanged.map { StoreSQL.quoted($0) + " IS ?" }.joined(separator: " AND "))",
                        names.map { changed[$0]! } + unchanged.map { row[$0] ?? .null }) > 0
                else { continue }
                work.changes?.replace(
                    try state.element(of: row, table: table),
                    with: try state.element(of: row.merging(changed) { $1 }, table: table), in: table.name)
                cells += changed.count
            }
            return cells
        }
        _ = try changeTenantKeys(table, tenant: tenant) { set in
            TenantKeySet(keys: Array(set.keys.prefix(1)), roots: set.roots)
        }
    }

    /// Goes through `tenant`'s records of `table` in primary key order,
    /// `batchSize` a write transaction, handing each batch (every column,
    /// index columns too when `indexes`) and the tenant's keys to `body`,
    /// which returns how many cells or values it wrote; counts both in
    /// `report` and reports progress after each batch.
    func eachBatch(
        of table: StoreSchema.Table, tenant: StoreValue, indexes: Bool, batchSize: Int, report: inout TenantRotation,
        _ progress: (StoreProgress) throws -> Void,
        _ body: (StoreWork, [[String: DatabaseValue]], StoreKeys) throws -> Int
    ) throws {
        let order = StoreSQL.quoted(table.primaryKey)
        let select =
            "SELECT \(StoreSQL.rowColumns(table, indexes: indexes).map(StoreSQL.quoted).joined(separator: ", ")) FROM \(StoreSQL.quoted(table.name)) WHERE \(StoreSQL.quoted(table.tenant!)) = ?"
        let tenantValue = try StoreSQL.databaseValue(tenant, for: table.field(table.tenant!)!, table: table.name)
        var after: DatabaseValue?
        while true {
            let (count, written, last) = try write { work -> (Int, Int, DatabaseValue?) in
                let (db, state) = (work.db, work.state)
                let rows =
                    try after.map {
                        try db.rows(
                            "\(select) AND \(order) > ? ORDER BY \(order) LIMIT \(batchSize)", [tenantValue, $0])
                    } ?? db.rows("\(select) ORDER BY \(order) LIMIT \(batchSize)", [tenantValue])
                guard !rows.isEmpty else { return (0, 0, nil) }
                let keys = try state.keys(for: table, tenant: tenant, db, creating: true, changes: work.changes)!
                return (rows.count, try body(work, rows, keys), rows.last?[table.primaryKey])
            }
            guard let last else { return }
            after = last
            report.rows += count
            report.cells += written
            try progress(StoreProgress(done: report.rows, total: report.rows))
        }
    }

    /// Replaces `tenant`'s keys with what `change` makes of them, in a
    /// write transaction holding its row, and returns them.
    func changeTenantKeys(
        _ table: StoreSchema.Table, tenant: StoreValue, _ change: (TenantKeySet) throws -> TenantKeySet
    ) throws -> TenantKeySet {
        try write { work in
            let (db, state) = (work.db, work.state)
            let arguments = [table.name.databaseValue, Data(tenant.encoded).databaseValue]
            let lock = db.dialect == .postgres ? " FOR UPDATE" : ""
            guard
                let stored = try db.data(
                    "SELECT keys FROM \(TenantKeys.table) WHERE tbl = ? AND tenant = ?\(lock)", arguments)
            else {
                throw CofferError(
                    .keyNotFound, "tenant \(TenantKeys.display(tenant)) of \(table.name) has no keys to rotate")
            }
            guard
                let set = try TenantKeys.openSet(
                    Array(stored), table: table.name, tenant: tenant.encoded, name: TenantKeys.display(tenant),
                    under: state.keys, held: try state.held(table, tenant))
            else { throw TenantKeys.shredded(TenantKeys.display(tenant), table: table.name) }
            let next = try change(set)
            if next.keys.map(\.id) != set.keys.map(\.id) || next.roots.map(\.version) != set.roots.map(\.version) {
                let sealed = try TenantKeys.seal(
                    next, table: table.name, tenant: tenant.encoded, under: state.keys,
                    held: try state.held(table, tenant))
                try db.execute(
                    "UPDATE \(TenantKeys.table) SET keys = ? WHERE tbl = ? AND tenant = ?",
                    [sealed.databaseValue] + arguments)
                func element(_ keys: Data) throws -> RecordSetSum? {
                    try TenantKeys.element(table: table.name, tenant: tenant.encoded, keys: keys, state: state)
                }
                work.changes?.replace(try element(stored), with: try element(sealed), in: TenantKeys.table)
            }
            return next
        }
    }
}
