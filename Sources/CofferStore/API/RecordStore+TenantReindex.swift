import Coffer
import Foundation
import GRDB

extension RecordStore {
    /// Gives `tenant` of `tableName` (a table kept per tenant) a new index
    /// root — or every live tenant of it, when `tenant` is nil — computes
    /// each of its records' blind index values again under it, `batchSize`
    /// records a transaction, then destroys the old root. Queries cover
    /// the old and the new root until the end, writers use the new one
    /// from the first step, and a run stopped anywhere is finished by the
    /// next (the tenant's row keeps both roots until the end; values
    /// already under the new one are passed over). The report's `cells`
    /// counts the index values written.
    @discardableResult
    public func reindexTenant(
        _ tableName: String, tenant: StoreValue? = nil, batchSize: Int = 1000,
        progress: (StoreProgress) throws -> Void = { _ in }
    ) throws -> TenantRotation {
        try forEachTenant(tableName, tenant: tenant, batchSize: batchSize) { table, tenant, report in
            try reindex(table, tenant: tenant, batchSize: batchSize, report: &report, progress: progress)
        }
    }

    /// One tenant's reindex: a new current root beside the old ones, every
    /// index value under an old one computed again, the old ones dropped.
    func reindex(
        _ table: StoreSchema.Table, tenant: StoreValue, batchSize: Int, report: inout TenantRotation,
        progress: (StoreProgress) throws -> Void
    ) throws {
        let target = try changeTenantKeys(table, tenant: tenant) { $0.roots.count == 1 ? try $0.reindexed() : $0 }
            .roots[0].version
        let indexed = table.fields.filter { !$0.indexes.isEmpty }
        try eachBatch(of: table, tenant: tenant, indexes: true, batchSize: batchSize, report: &report, progress) {
            work, rows, keys in
            try rows.reduce(0) {
                $0 + (try reindexRow($1, table: table, fields: indexed, keys: keys, target: target, work))
            }
        }
        _ = try changeTenantKeys(table, tenant: tenant) { set in
            TenantKeySet(keys: set.keys, roots: Array(set.roots.prefix(1)))
        }
    }

    /// One record's index values under root `target`, written only over
    /// the row as read (a writer that changed it meanwhile wrote them under
    /// the new root already); returns how many it wrote.
    func reindexRow(
        _ row: [String: DatabaseValue], table: StoreSchema.Table, fields: [StoreSchema.Field], keys: StoreKeys,
        target: UInt16, _ work: StoreWork
    ) throws -> Int {
        let (db, state) = (work.db, work.state)
        func stale(_ index: StoreSchema.Index) -> Bool {
            if index.tokens != nil { return true }
            guard case .blob(let stored) = (row[index.name] ?? .null).storage else { return false }
            return stored.count < 2 || UInt16(stored[0]) << 8 | UInt16(stored[1]) != target
        }
        let due = fields.filter { $0.indexes.contains(where: stale) }
        guard !due.isEmpty else { return 0 }
        let needed = Set(due.flatMap { [$0.name] + $0.indexes.flatMap(\.with) })
        let record = try state.record(from: row, table: table, opening: needed, db)
        var columns: [String: DatabaseValue] = [:]
        var tokens: [String: [Data]] = [:]
        for field in due {
            for index in field.indexes where stale(index) {
                if index.tokens != nil {
                    tokens[index.name] = try state.tokenEntries(
                        index, of: field, in: record, table: table, version: target, under: keys)
                } else {
                    columns[index.name] = try state.indexValue(
                        index, of: field, in: record, table: table, version: target, under: keys)
                }
            }
        }
        let names = columns.keys.sorted()
        let unchanged = [table.primaryKey] + (StoreSQL.hasLife(table) ? [StoreSQL.lifeColumn] : []) + names
        let assignments = names.isEmpty ? [] : names.map { StoreSQL.quoted($0) + " = ?" }
        // A row with token indexes alone is still checked as read (set to itself).
        let set =
            assignments.isEmpty
            ? ["\(StoreSQL.quoted(table.primaryKey)) = \(StoreSQL.quoted(table.primaryKey))"] : assignments
        guard
            try db.execute(
                "UPDATE \(StoreSQL.quoted(table.name)) SET \(set.joined(separator: ", ")) WHERE \(unchanged.map { StoreSQL.quoted($0) + " IS ?" }.joined(separator: " AND "))",
                names.map { columns[$0]! } + unchanged.map { row[$0] ?? .null }) > 0
        else { return 0 }
        let key = try StoreSQL.storeValue(
            row[table.primaryKey] ?? .null, for: table.field(table.primaryKey)!, table: table.name)
        try state.writeTokens(tokens, key: key, table: table, db, replacing: true)
        return columns.count + tokens.count
    }
}
