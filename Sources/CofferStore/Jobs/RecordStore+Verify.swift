import Coffer
import Foundation
import GRDB

/// What `verify` found.
public struct StoreVerification: Sendable, CustomStringConvertible {
    public var rows = 0
    public var cells = 0
    public var indexEntries = 0
    /// The first problems (at most 50), each naming table, primary key and
    /// column, never a value.
    public var problems: [String] = []
    /// How many problems there were in all.
    public var problemCount = 0

    public var isIntact: Bool { problemCount == 0 }

    public var description: String {
        "\(rows) rows, \(cells) sealed cells, \(indexEntries) index entries: "
            + (isIntact ? "all open and match" : "\(problemCount) problems")
    }

    mutating func note(_ problem: String) {
        problemCount += 1
        if problems.count < 50 { problems.append(problem) }
    }
}

extension RecordStore {
    /// Opens every sealed cell and recomputes every blind index entry (at
    /// the version it names), in batches of `batchSize` rows read in one
    /// transaction each, the opening spread over every core. Read-only: run
    /// again after an interruption. `progress` gets the rows done so far.
    public func verify(batchSize: Int = 2000, progress: (Int) -> Void = { _ in }) throws -> StoreVerification {
        var result = StoreVerification()
        for table in schema.tables {
            var after: DatabaseValue = .null
            while true {
                let (rows, state, tenants): ([[String: DatabaseValue]], StoreState, ResolvedTenantKeys) = try read {
                    work in
                    let (db, state) = (work.db, work.state)
                    let order = StoreSQL.quoted(table.primaryKey)
                    let columns = StoreSQL.rowColumns(table, indexes: true)
                    let condition = after.isNull ? "" : " WHERE \(order) > ?"
                    var rows = try db.rows(
                        "SELECT \(columns.map(StoreSQL.quoted).joined(separator: ", ")) FROM \(StoreSQL.quoted(table.name))\(condition) ORDER BY \(order) LIMIT \(batchSize)",
                        after.isNull ? [] : [after])
                    // A token index's entries, sorted and joined, under the
                    // index's name: one query per index for the batch's key range.
                    for (_, index) in table.tokenIndexes {
                        guard let first = rows.first?[table.primaryKey], let last = rows.last?[table.primaryKey]
                        else { break }
                        var entries: [DatabaseValue: Data] = [:]
                        for entry in try db.rows(
                            "SELECT key, entry FROM \(StoreSQL.quoted(StoreSQL.tokenTableName(table.name, index.name))) WHERE key >= ? AND key <= ? ORDER BY key, entry",
                            [first, last])
                        {
                            guard let key = entry["key"], let bytes = entry["entry"].flatMap(Data.fromDatabaseValue)
                            else { continue }
                            entries[key, default: Data()] += bytes
                        }
                        for position in rows.indices {
                            rows[position][index.name] =
                                (entries[rows[position][table.primaryKey] ?? .null] ?? Data()).databaseValue
                        }
                    }
                    return (rows, state, try state.tenantKeys(of: rows, table: table, db))
                }
                guard let last = rows.last else { break }
                after = last[table.primaryKey] ?? .null
                let outcomes = Locked([StoreVerification](repeating: StoreVerification(), count: rows.count))
                DispatchQueue.concurrentPerform(iterations: rows.count) { index in
                    let outcome = state.check(rows[index], table: table, tenants: tenants)
                    outcomes.withLock { $0[index] = outcome }
                }
                for outcome in outcomes.withLock({ $0 }) {
                    result.rows += outcome.rows
                    result.cells += outcome.cells
                    result.indexEntries += outcome.indexEntries
                    for problem in outcome.problems { result.note(problem) }
                }
                progress(result.rows)
            }
            if let problem = try checkRecordSet(table) { result.note(problem) }
        }
        if schema.hasTenants,
            let problem = try checkRecordSet(named: TenantKeys.table, count: { try TenantKeys.tally($0, state: $1) })
        {
            result.note(problem)
        }
        if let problem = try strayDigestRows() { result.note(problem) }
        return result
    }

    /// `table`'s rows against its record-set digest, in one snapshot: nil
    /// when they match, else what differs (the digest is a sum, so a record
    /// deleted or put back is named by its table; a cell that does not
    /// open, or a row copied in, is also named by its key above).
    func checkRecordSet(_ table: StoreSchema.Table) throws -> String? {
        try checkRecordSet(named: table.name) { db, state in try RecordSetDigest.tally(of: table, db, state: state) }
    }

    /// The record set `name` as `count` finds it against its digest.
    func checkRecordSet(
        named name: String, count: (any StoreConnection, StoreState) throws -> RecordSetTally
    ) throws -> String? {
        try read { work -> String? in
            let (db, state) = (work.db, work.state)
            guard state.recordSet != nil else { return nil }
            let stored: RecordSetTally
            do {
                stored = try RecordSetDigest.shards(of: name, db, keys: state.keys).reduce(RecordSetTally()) {
                    $0 + $1.tally
                }
            } catch let error as CofferError where error.code == .stateAuthenticationFailed {
                return "\(name): \(error)"
            }
            let found = try count(db, state)
            guard found != stored else { return nil }
            let missing = Int64(bitPattern: stored.count &- found.count)
            if missing > 0 {
                return
                    "\(name): \(missing) record\(missing == 1 ? "" : "s") fewer than its record-set digest counts: deleted without the store's keys"
            }
            if missing < 0 {
                return
                    "\(name): \(-missing) row\(missing == -1 ? "" : "s") more than its record-set digest counts: inserted without the store's keys"
            }
            return
                "\(name): its rows do not match its record-set digest: a row was replaced (an older copy put back, or a cell changed) without the store's keys"
        }
    }

    /// Digest rows of a table the schema does not have: written without the keys.
    func strayDigestRows() throws -> String? {
        try read { work -> String? in
            guard work.state.recordSet != nil else { return nil }
            let names = Set(work.state.schema.digestNames)
            let stray = try work.db.rows("SELECT DISTINCT tbl FROM \(RecordSetDigest.table)").compactMap {
                $0["tbl"].flatMap(String.fromDatabaseValue)
            }.filter { !names.contains($0) }
            guard !stray.isEmpty else { return nil }
            return
                "the record-set digest holds rows for tables the store does not have (\(stray.sorted().joined(separator: ", "))): written without the store's keys"
        }
    }

}

extension StoreState {
    /// One row: its cells open, its index entries are what its values give.
    func check(_ row: [String: DatabaseValue], table: StoreSchema.Table, tenants: ResolvedTenantKeys)
        -> StoreVerification
    {
        var outcome = StoreVerification(rows: 1)
        let key = (row[table.primaryKey] ?? .null).description
        let record: StoreRecord
        do { record = try self.record(from: row, table: table, nil, resolved: tenants) } catch {
            outcome.note("\(table.name) \(table.primaryKey)=\(key): a sealed cell does not open (\(error))")
            return outcome
        }
        // A tenant's index values are under its own keys (it opened above, so it has them).
        let keys = table.tenant.flatMap { try? tenants[(record[$0] ?? .null).encoded]?.get() } ?? self.keys
        for field in table.fields where field.sealed {
            if (try? unsealed(row[field.name] ?? .null, field: field, table: table)) != nil { continue }
            outcome.cells += 1
            for index in field.indexes where index.tokens != nil {
                guard case .blob(let joined) = (row[index.name] ?? .null).storage else { continue }
                let version =
                    joined.count >= 2
                    ? UInt16(joined[joined.startIndex]) << 8 | UInt16(joined[joined.startIndex + 1])
                    : keys.currentIndexVersion
                let expected = try? tokenEntries(
                    index, of: field, in: record, table: table, version: version, under: keys)
                if let expected, Data(expected.joined()) == joined {
                    outcome.indexEntries += expected.count
                } else {
                    outcome.note(
                        "\(table.name) \(table.primaryKey)=\(key): token index \(index.name) does not match its value")
                }
            }
            for index in field.indexes where index.tokens == nil {
                let stored = row[index.name] ?? .null
                let inputs = [record[field.name] ?? .null] + index.with.map { record[$0] ?? .null }
                let texts = StoreKeys.indexInput(inputs, transforms: index.transforms)
                switch (stored.storage, texts) {
                case (.null, nil): continue
                case (.blob(let data), let texts?) where data.count >= 2:
                    let version = UInt16(data[data.startIndex]) << 8 | UInt16(data[data.startIndex + 1])
                    let expected = try? keys.indexValue(
                        texts, table: table.name, index: index.name, bits: index.bits, version: version)
                    if expected == Array(data) {
                        outcome.indexEntries += 1
                        continue
                    }
                default: break
                }
                outcome.note("\(table.name) \(table.primaryKey)=\(key): index \(index.name) does not match its value")
            }
        }
        return outcome
    }
}
