import Coffer
import Foundation
import GRDB

/// What ``RecordStore/shredTenant(_:tenant:keepRecords:)`` did.
public struct TenantShred: Sendable, Equatable {
    /// The tenant's records deleted (0 when they were kept).
    public let recordsDeleted: Int
    /// Whether the tenant had keys to destroy (false: it had never
    /// written; its tombstone now keeps it from ever writing).
    public let destroyedKeys: Bool
    /// Whether the SQLite write-ahead log was emptied after the shred, so
    /// no copy of the destroyed keys is left in it; false when readers
    /// held it (the next write that can checkpoint empties it), and always
    /// true on PostgreSQL, whose WAL and dead row versions are the
    /// server's (docs/store.md, "Tenants").
    public let logCleared: Bool
    /// Whether the tenant's key was destroyed at its holder outside the
    /// database (a table whose keys are held, ``TenantKeyPlace/holder``):
    /// then no backup of the database opens its cells either.
    public let destroyedAtHolder: Bool
}

extension RecordStore {
    /// Destroys the keys of `tenant` in `tableName` (a table kept per
    /// tenant), leaving a sealed tombstone in their place, and deletes
    /// the tenant's records unless `keepRecords`. In one transaction: a
    /// kill leaves the tenant whole or shredded. Afterwards none of its
    /// cells opens from the live database, every other tenant's records
    /// open and are found as before, and a write for the tenant is
    /// refused (`keyNotFound`). On SQLite the write-ahead log is then
    /// emptied (`secure_delete` has zeroed the freed pages), so the file,
    /// its WAL and shared memory hold no copy of the keys. A backup taken
    /// before holds the keys sealed under the store's key ring, and the
    /// ring opens them — unless the table's keys are held outside the
    /// database (``TenantKeyPlace/holder``): the tenant's key is then
    /// destroyed at the holder first (``TenantKeyHolder/destroy(tenant:)``),
    /// and no backup opens its cells either. docs/store.md says what
    /// reaches backups.
    @discardableResult
    public func shredTenant(_ tableName: String, tenant: StoreValue, keepRecords: Bool = false) throws -> TenantShred {
        // At the holder first: if it cannot be reached nothing has changed,
        // and a shred run again after a failure here finds it done there.
        let schemaTable = try state.withLock { $0 }.schema.table(tableName)
        var atHolder = false
        if !tenant.isNull, let held = try state.withLock({ $0 }).held(schemaTable, tenant) {
            try held.holder.destroy(tenant: held.subject)
            atHolder = true
        }
        let (deleted, destroyed) = try write { work -> (Int, Bool) in
            let (db, state) = (work.db, work.state)
            let table = try state.schema.table(tableName)
            guard let name = table.tenant, let field = table.field(name) else {
                throw CofferError(.invalidArgument, "\(table.name) is not kept per tenant: it has no tenant keys")
            }
            guard !tenant.isNull else { throw CofferError(.invalidArgument, "name the tenant to shred") }
            let column = try StoreSQL.databaseValue(tenant, for: field, table: table.name)
            let arguments = [table.name.databaseValue, Data(tenant.encoded).databaseValue]
            // Held until the commit: writes of this tenant wait, then see the tombstone.
            let lock = db.dialect == .postgres ? " FOR UPDATE" : ""
            let existing = try db.data(
                "SELECT keys FROM \(TenantKeys.table) WHERE tbl = ? AND tenant = ?\(lock)", arguments)
            let wasLive = try existing.map { sealed -> Bool in
                try !TenantKeys.isTombstone(
                    Array(sealed), table: table.name, tenant: tenant.encoded, name: TenantKeys.display(tenant),
                    under: state.keys)
            }
            let tombstone = try TenantKeys.sealTombstone(table: table.name, tenant: tenant.encoded, under: state.keys)
            try db.execute(
                "INSERT INTO \(TenantKeys.table) (tbl, tenant, keys) VALUES (?, ?, ?) ON CONFLICT (tbl, tenant) DO UPDATE SET keys = excluded.keys",
                arguments + [tombstone.databaseValue])
            // The key rows' record set: the row as it was out, the tombstone in.
            func element(_ keys: Data) throws -> RecordSetSum? {
                try TenantKeys.element(table: table.name, tenant: tenant.encoded, keys: keys, state: state)
            }
            work.changes?.replace(try existing.flatMap(element), with: try element(tombstone), in: TenantKeys.table)
            state.tenantCache.forget(TenantKeyCache.Name(table: table.name, tenant: tenant.encoded))
            guard !keepRecords else { return (0, wasLive ?? false) }
            work.changes?.reserve(table.name, db)
            let removed = try db.rows(
                "DELETE FROM \(StoreSQL.quoted(table.name)) WHERE \(StoreSQL.quoted(name)) = ? RETURNING \(StoreSQL.rowColumns(table, indexes: false).map(StoreSQL.quoted).joined(separator: ", "))",
                [column])
            let none = Dictionary(uniqueKeysWithValues: table.tokenIndexes.map { ($0.index.name, [Data]()) })
            for row in removed {
                work.changes?.remove(try state.element(of: row, table: table), from: table.name)
                let key = try StoreSQL.storeValue(
                    row[table.primaryKey] ?? .null, for: table.field(table.primaryKey)!, table: table.name)
                try state.writeTokens(none, key: key, table: table, db, replacing: true)
            }
            return (removed.count, wasLive ?? false)
        }
        // The pages the shred changed are copied into the file (where
        // secure_delete zeroed what it freed) and the log emptied.
        let cleared = (try? backend.checkpoint()) != nil
        residue.withLock { $0 = !cleared }
        return TenantShred(
            recordsDeleted: deleted, destroyedKeys: destroyed, logCleared: cleared, destroyedAtHolder: atHolder)
    }
}

extension RecordStore {
    /// Where the tenants' keys of tables that hold them outside the
    /// database (``TenantKeyPlace/holder``) are: coffer-server
    /// (``KeyServerTenantKeyHolder``) or a keychain
    /// (``KeychainTenantKeyHolder``). Without one, such a table's records
    /// are `unavailable`; every other table works as before.
    public func holdTenantKeys(at holder: any TenantKeyHolder) {
        state.withLock { $0 }.tenantCache.holder = holder
    }

    /// How long a held tenant's opened keys are kept before its holder is
    /// asked again (so a shred at the holder is seen within it): 60
    /// seconds by default; 0 asks at every use.
    public var heldTenantKeyLifetime: TimeInterval {
        get { state.withLock { $0.tenantCache }.heldLifetime }
        set { state.withLock { $0.tenantCache }.heldLifetime = newValue }
    }
}

extension RecordStore {
    /// How many tenants' keys this handle keeps unsealed between uses
    /// (each still checked against its row at every use), the least
    /// recently used dropped first: 4,096 by default; 10,000 took 2.5 MiB
    /// in the benchmark (docs/performance.md); 0 keeps none.
    public var tenantKeyCacheLimit: Int {
        get { state.withLock { $0.tenantCache }.limit }
        set { state.withLock { $0.tenantCache }.limit = newValue }
    }
}
