import Coffer
import Foundation
import GRDB

/// What the jobs compute for one row's cell or index, from its columns.
extension StoreState {
    /// The context of `field`'s cell in a row read as columns.
    func cellContext(_ field: StoreSchema.Field, table: StoreSchema.Table, row: [String: DatabaseValue]) throws
        -> SealingContext
    {
        func clear(_ name: String) throws -> StoreValue {
            try StoreSQL.storeValue(row[name] ?? .null, for: table.field(name)!, table: table.name)
        }
        var bound: StoreRecord = [:]
        let names = CellContext.bound(field, table: table)
        for name in names { bound[name] = try clear(name) }
        let bytes = try CellContext(storeID: keys.storeID, table: table, field: field).bytes(
            key: try clear(table.primaryKey), life: try StoreKeys.life(of: row, table: table.name), record: bound)
        return SealingContext(encoded: bytes, count: 6 + 2 * names.count)
    }

    /// The stored value of `index` on `field` for `record` at `version`, null when the row has none.
    func indexValue(
        _ index: StoreSchema.Index, of field: StoreSchema.Field, in record: StoreRecord, table: StoreSchema.Table,
        version: UInt16, under keys: StoreKeys? = nil
    ) throws -> DatabaseValue {
        let inputs = [record[field.name] ?? .null] + index.with.map { record[$0] ?? .null }
        guard let texts = StoreKeys.indexInput(inputs, transforms: index.transforms) else { return .null }
        return Data(
            try (keys ?? self.keys).indexValue(
                texts, table: table.name, index: index.name, bits: index.bits, version: version)
        )
        .databaseValue
    }
}
