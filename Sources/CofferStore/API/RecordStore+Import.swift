import Coffer
import Foundation

extension RecordStore {
    /// Inserts batch after batch from `next` (until it returns nil), each
    /// batch in a transaction of its own, all or none of it, and calls
    /// `committed` with each batch's primary keys once that batch is
    /// committed: the way to load more than fits in memory.
    ///
    /// While one batch is written, the next is sealed on the other cores,
    /// under the state and for the primary keys it will most likely get.
    /// When its transaction begins, both are checked: if the store's state
    /// moved (a rotation, a migration) or another writer took those keys,
    /// the batch is sealed again in its transaction, as `put(contentsOf:into:)`
    /// does. A failure stops the load: the batches before it stay committed.
    ///
    /// ```swift
    /// try store.put(batches: { reader.next(25_000) }, into: "people") { keys in
    ///     print("stored", keys.count)
    /// }
    /// ```
    public func put(
        batches next: () throws -> [StoreRecord]?, into tableName: String,
        committed: ([StoreValue]) throws -> Void
    ) throws {
        var ahead: SealedBatch?
        var current = try next()
        while let records = current {
            // A failure to read the next batch stops the load only after
            // this one is committed.
            let reading = Result { try next() }
            let following = try? reading.get()
            let (keys, started) = try write { work -> ([StoreValue], SealedBatch?) in
                let (db, state) = (work.db, work.state)
                let table = try state.schema.table(tableName)
                // A table kept per tenant seals each tenant's records under
                // its keys, found or made in this transaction: no sealing ahead.
                if table.tenant != nil { return (try put(contentsOf: records, into: tableName, work), nil) }
                work.changes?.reserve(table.name, db)
                let keys = try state.primaryKeys(for: try Self.checked(records, table: table), table: table, db)
                let clear = table.fields.filter { !$0.sealed }
                let sealer = try RowSealer(
                    keys: state.keys, table: table, fields: table.fields.filter(\.sealed),
                    version: state.keys.currentIndexVersion, state: state)
                // The next batch starts sealing now, for the keys it would
                // get if no one else writes in between, while this one is
                // written. Its records are checked in its own transaction;
                // one whose keys cannot be assigned is left to it to refuse.
                let started = following.flatMap { following -> SealedBatch? in
                    guard
                        let expected = try? StoreState.assignKeys(
                            to: following, table: table,
                            highest: { max(try StoreState.highestKey(table, db), Self.largestInteger(keys)) }
                        ).keys
                    else { return nil }
                    return SealedBatch(
                        epoch: state.epoch, keys: expected,
                        rows: ChunkPipeline(Array(zip(following, expected)), chunk: 256) {
                            try InsertRow($0.0, key: $0.1, table: table, clear: clear, sealer: sealer)
                        })
                }
                if let ahead, ahead.epoch == state.epoch, ahead.keys == keys {
                    try ahead.rows.consume { _, rows in
                        try insert(rows, clear: clear, sealer: sealer, table: table, work)
                    }
                } else {
                    ahead?.rows.stop()
                    try put(contentsOf: records, keys: keys, clear: clear, sealer: sealer, table: table, work)
                }
                return (keys, started)
            }
            ahead = started
            try committed(keys)
            current = try reading.get()
        }
        ahead?.rows.stop()
    }

    /// A batch being sealed ahead of its transaction: the state's epoch and
    /// the keys it is sealed for, to be checked when the transaction begins.
    struct SealedBatch: Sendable {
        let epoch: UInt64
        let keys: [StoreValue]
        let rows: ChunkPipeline<(StoreRecord, StoreValue), InsertRow>
    }

    /// `records`, refused if one names a field `table` lacks.
    static func checked(_ records: [StoreRecord], table: StoreSchema.Table) throws -> [StoreRecord] {
        for record in records {
            for name in record.keys where table.field(name) == nil {
                throw CofferError(.invalidArgument, "\(table.name) has no field \(name)")
            }
        }
        return records
    }

    /// The largest integer among `keys` (0 when none is an integer).
    static func largestInteger(_ keys: [StoreValue]) -> Int64 {
        keys.reduce(0) { largest, key in max(largest, key.integerValue ?? 0) }
    }

    /// Seals and inserts `records` under `keys`. Sealing runs on every
    /// core, ahead of this thread, which writes the rows in order (and
    /// seals too when it would wait).
    func put(
        contentsOf records: [StoreRecord], keys: [StoreValue], clear: [StoreSchema.Field], sealer: RowSealer,
        table: StoreSchema.Table, _ work: StoreWork
    ) throws {
        try Self.pipeline(
            Array(zip(records, keys)), chunk: 256,
            map: { try InsertRow($0.0, key: $0.1, table: table, clear: clear, sealer: sealer) },
            consume: { _, rows in try insert(rows, clear: clear, sealer: sealer, table: table, work) })
    }

    /// Inserts rows already sealed, and their token entries; their
    /// elements join the transaction's record-set changes.
    func insert(
        _ rows: [InsertRow], clear: [StoreSchema.Field], sealer: RowSealer, table: StoreSchema.Table, _ work: StoreWork
    ) throws {
        let (db, state) = (work.db, work.state)
        try state.insert(rows, clear: clear, columns: sealer.columns, table: table, db)
        for row in rows { work.changes?.add(row.element, to: table.name) }
        for row in rows where !row.tokens.isEmpty {
            try state.writeTokens(row.tokens, key: row.key, table: table, db, replacing: false)
        }
    }
}
