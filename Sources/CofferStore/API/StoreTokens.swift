import Coffer
import Foundation
import GRDB

/// What sealing a row's sealed fields gives: the cells and index values of
/// its own columns, and the entries of its token indexes.
struct SealedRow: Sendable {
    var columns: [String: DatabaseValue] = [:]
    /// Token index name → the row's entries in it.
    var tokens: [String: [Data]] = [:]

    var isEmpty: Bool { columns.isEmpty && tokens.isEmpty }
    /// Cells and index entries (a row's life, written with its first cell, is neither).
    var count: Int {
        columns.count - (columns[StoreSQL.lifeColumn] == nil ? 0 : 1) + tokens.values.reduce(0) { $0 + $1.count }
    }
}

extension StoreSchema.Table {
    /// The token indexes and the fields they are on.
    var tokenIndexes: [(field: StoreSchema.Field, index: StoreSchema.Index)] {
        fields.flatMap { field in field.indexes.filter { $0.tokens != nil }.map { (field, $0) } }
    }
}

extension StoreState {
    /// The sealed cells of `fields` for `record` (row `key`, whose life is
    /// `life`), their index values and token entries under the current
    /// version; the life is among the columns, to write it when it is new.
    /// A table kept per tenant seals under the record's tenant's keys,
    /// made through `db` at the tenant's first write.
    func sealedRow(
        _ record: StoreRecord, key: StoreValue, life: [UInt8], table: StoreSchema.Table, fields: [StoreSchema.Field],
        _ db: (any StoreConnection)?, changes: RecordSetChanges? = nil, keys resolved: StoreKeys? = nil
    ) throws -> SealedRow {
        let keys =
            try resolved
            ?? keys(for: table, tenant: table.tenant.map { record[$0] ?? .null }, db, creating: true, changes: changes)!
        let sealer = try RowSealer(keys: keys, table: table, fields: fields, version: keys.currentIndexVersion)
        let (values, tokens) = try sealer.seal(record, key: key, life: life)
        return SealedRow(columns: Dictionary(uniqueKeysWithValues: zip(sealer.columns, values)), tokens: tokens)
    }

    func tokenEntries(
        _ index: StoreSchema.Index, of field: StoreSchema.Field, in record: StoreRecord, table: StoreSchema.Table,
        version: UInt16, under keys: StoreKeys? = nil
    ) throws -> [Data] {
        try (keys ?? self.keys).tokenEntries(
            record[field.name] ?? .null, tokens: index.tokens!, transforms: index.transforms, table: table.name,
            index: index.name, bits: index.bits, version: version
        ).map { Data($0) }
    }

    /// Writes the token entries of row `key`, first deleting those it had
    /// when `replacing`.
    func writeTokens(
        _ tokens: [String: [Data]], key: StoreValue, table: StoreSchema.Table, _ db: any StoreConnection,
        replacing: Bool
    ) throws {
        guard !tokens.isEmpty else { return }
        let keyValue = try StoreSQL.databaseValue(key, for: table.field(table.primaryKey)!, table: table.name)
        for (name, entries) in tokens.sorted(by: { $0.key < $1.key }) {
            let side = StoreSQL.quoted(StoreSQL.tokenTableName(table.name, name))
            if replacing { try db.execute("DELETE FROM \(side) WHERE key = ?", [keyValue]) }
            for entry in entries {
                try db.execute(
                    "INSERT INTO \(side) (entry, key) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    [entry.databaseValue, keyValue])
            }
        }
    }
}

extension RecordStore {
    /// The records of `tableName` with `token` among the tokens of
    /// `fieldName`, through its token index: the token's entry for every
    /// active version picks candidates, which are opened; a record is
    /// returned only when the token, transformed as the index does, is one
    /// of its value's tokens.
    public func find(_ tableName: String, where fieldName: String, hasToken token: String) throws -> [StoreRecord] {
        try read { work in try find(tableName, where: fieldName, hasToken: token, work) }
    }

    func find(
        _ tableName: String, where fieldName: String, hasToken token: String, _ work: StoreWork
    ) throws -> [StoreRecord] {
        try fetch(StoreQuery(tableName).filter(fieldName, hasToken: token), counting: false, work).records
    }

    /// The condition that `fieldName` of `table` has `token`: SQL that picks
    /// the candidates through the token index (the token's entry for every
    /// active version), and the check of an opened candidate.
    func tokenCondition(_ table: StoreSchema.Table, field fieldName: String, token: String, under keys: StoreKeys)
        throws -> TokenCondition
    {
        guard let field = table.field(fieldName) else {
            throw CofferError(.invalidArgument, "\(table.name) has no field \(fieldName)")
        }
        guard let index = field.indexes.first(where: { $0.tokens != nil }), let tokens = index.tokens else {
            throw CofferError(.invalidArgument, "\(table.name).\(field.name) has no token index")
        }
        let wanted = tokens.tokens(of: token, transforms: index.transforms)
        guard wanted.count == 1 else {
            throw CofferError(
                .invalidArgument, "the search value makes \(wanted.count) tokens of \(index.name); give exactly one"
            )
        }
        let entries = try keys.indexVersions.map {
            Data(try keys.indexValue(wanted, table: table.name, index: index.name, bits: index.bits, version: $0))
                .databaseValue
        }
        let side = StoreSQL.quoted(StoreSQL.tokenTableName(table.name, index.name))
        return TokenCondition(
            sql:
                "\(StoreSQL.quoted(table.primaryKey)) IN (SELECT key FROM \(side) WHERE entry IN (\(entries.map { _ in "?" }.joined(separator: ", "))))",
            arguments: entries, field: field.name, tokens: tokens, transforms: index.transforms, token: wanted[0])
    }
}

/// A token condition of a query: its SQL, and the check that an opened
/// record really has the token (entries of two tokens may collide).
struct TokenCondition {
    let sql: String
    let arguments: [DatabaseValue]
    let field: String
    let tokens: IndexTokens
    let transforms: [IndexTransform]
    let token: String

    func matches(_ record: StoreRecord) -> Bool {
        guard let text = (record[field] ?? .null).indexText else { return false }
        return tokens.tokens(of: text, transforms: transforms).contains(token)
    }
}
