import Coffer
import Foundation
import GRDB

/// The tenants' key rows counted as a record set of their own, beside the
/// tables' (docs/store.md, "Tenants"): named `coffer_tenant_keys` in the
/// digest (no table of a schema may be), each row's element the HMAC of
/// its table and tenant and its sealed keys. A key row deleted, a tombstone
/// replaced by the keys it replaced (from a backup), or a row copied in
/// is a record set that no longer matches its digest, which `verify`
/// reports as it does a table's.
extension TenantKeys {
    /// The record-set plan of the key rows: a "table" whose one sealed
    /// field is the keys, its primary key the table and tenant.
    static let digestTable = StoreSchema.Table(
        name: table, primaryKey: "name",
        fields: [.init(name: "name", type: .bytes), .init(name: "keys", type: .bytes, sealed: true)])

    /// The element of the key row of `tenant` (encoded) in `tableName`, or
    /// nil when the store keeps no digest.
    static func element(table tableName: String, tenant: [UInt8], keys: Data, state: StoreState) throws
        -> RecordSetSum?
    {
        guard let plan = try state.recordSet?.table(digestTable, migrating: nil) else { return nil }
        var name: [UInt8] = []
        try CellContext.append(part: Array(tableName.utf8), to: &name)
        name += tenant
        return plan.element(key: Data(name).databaseValue, life: .null) { _ in keys.databaseValue }
    }

    /// The tally of every key row as it stands.
    static func tally(_ db: any StoreConnection, state: StoreState) throws -> RecordSetTally {
        var tally = RecordSetTally()
        guard try db.tableExists(table) else { return tally }
        for row in try db.rows("SELECT tbl, tenant, keys FROM \(table)") {
            guard case .string(let name) = row["tbl"]?.storage, case .blob(let tenant) = row["tenant"]?.storage,
                case .blob(let keys) = row["keys"]?.storage
            else {
                throw CofferError(.stateAuthenticationFailed, "a row of \(table) was not written by the store")
            }
            if let element = try element(table: name, tenant: Array(tenant), keys: keys, state: state) {
                tally.add(element)
            }
        }
        return tally
    }
}

extension StoreSchema {
    /// Whether a table is kept per tenant.
    var hasTenants: Bool { tables.contains { $0.tenant != nil } }

    /// The names the record-set digest has shards for: each table's, and
    /// the tenants' key rows' when a table is kept per tenant.
    var digestNames: [String] { tables.map(\.name) + (hasTenants ? [TenantKeys.table] : []) }
}
