import Coffer
import Crypto
import Foundation
import GRDB

/// Each table's record set, authenticated (docs/store.md, "The record
/// set"): the digest of a table is the count of its live records and the
/// sum modulo 2²⁵⁶ of their elements (``RecordSetKey``), kept in
/// ``shards`` rows of `coffer_record_set`, each sealed under the key ring
/// with its table and number bound in. The table's digest is the sum of
/// its shards. A write transaction adds what it changed to one shard of
/// each table it wrote — on PostgreSQL one no other transaction holds
/// (`FOR UPDATE SKIP LOCKED`), so writers side by side do not queue
/// behind one row — and the sum does not care which.
enum RecordSetDigest {
    static let table = "coffer_record_set"
    /// Shards per table.
    static let shards = StoreAnchorState.shardsPerTable
    /// The state row holding the sealed record-set key.
    static let keyName = "record_set_key"

    /// One shard as stored: its tally and its sequence number, which every
    /// change raises (an anchor orders states by them).
    struct Shard: Equatable, Sendable {
        var tally = RecordSetTally()
        var sequence: UInt64 = 0
    }

    /// The shard a write takes: on PostgreSQL one no other transaction
    /// holds (`SKIP LOCKED`), else shard 0 (SQLite writes one at a time).
    static func pickSQL(_ dialect: StoreDialect) -> String {
        switch dialect {
        case .postgres:
            "SELECT shard, state FROM \(table) WHERE tbl = ? ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED"
        case .sqlite: "SELECT shard, state FROM \(table) WHERE tbl = ? AND shard = 0"
        }
    }

    static func createTable(_ dialect: StoreDialect) -> String {
        "CREATE TABLE IF NOT EXISTS \(table) (tbl TEXT NOT NULL, shard INTEGER NOT NULL, state \(dialect.bytes) NOT NULL, PRIMARY KEY (tbl, shard))\(dialect.strict)"
    }

    static func context(storeID: [UInt8], table: String, shard: Int) throws -> SealingContext {
        try SealingContext(
            parts: [
                Array("coffer store v1 record set shard".utf8), storeID, Array(table.utf8),
                withUnsafeBytes(of: UInt16(shard).bigEndian, Array.init),
            ])
    }

    /// count (8 bytes) ‖ sum (32) ‖ sequence (8), big-endian, sealed.
    static func seal(_ shard: Shard, table: String, number: Int, keys: StoreKeys) throws -> Data {
        var plain = withUnsafeBytes(of: shard.tally.count.bigEndian, Array.init)
        plain += shard.tally.sum.bytes
        plain += withUnsafeBytes(of: shard.sequence.bigEndian, Array.init)
        let sealed = try keys.keyRing.seal(
            plain, context: try keys.shardCache.context(table, number, storeID: keys.storeID))
        keys.shardCache.keep(shard, table, number, sealed: sealed)
        return sealed
    }

    static func open(_ sealed: DatabaseValue?, table: String, number: Int, keys: StoreKeys) throws -> Shard {
        guard case .blob(let bytes)? = sealed?.storage else { throw changed(table, number) }
        if let known = keys.shardCache.shard(table, number, sealed: bytes) { return known }
        guard
            let plain = try? keys.keyRing.open(
                bytes, context: try keys.shardCache.context(table, number, storeID: keys.storeID)),
            plain.count == 48
        else { throw changed(table, number) }
        let array = Array(plain)
        func integer(_ range: Range<Int>) -> UInt64 { array[range].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        let shard = Shard(
            tally: RecordSetTally(count: integer(0..<8), sum: try RecordSetSum(bytes: array[8..<40])),
            sequence: integer(40..<48))
        keys.shardCache.keep(shard, table, number, sealed: bytes)
        return shard
    }

    static func changed(_ table: String, _ number: Int) -> CofferError {
        CofferError(
            .stateAuthenticationFailed,
            "the record-set digest of \(table) (shard \(number)) was changed or removed without the store's keys")
    }

    /// The shards of `tables` (replacing any they had), empty, or holding
    /// what `tallies` counted.
    static func start(
        _ tables: [String], tallies: [String: RecordSetTally] = [:], sequence: UInt64 = 0, _ db: any StoreConnection,
        keys: StoreKeys
    ) throws {
        try db.execute(createTable(db.dialect))
        for name in tables {
            try db.execute("DELETE FROM \(table) WHERE tbl = ?", [name.databaseValue])
            for number in 0..<shards {
                let shard = Shard(
                    tally: number == 0 ? tallies[name] ?? RecordSetTally() : RecordSetTally(), sequence: sequence)
                try db.execute(
                    "INSERT INTO \(table) (tbl, shard, state) VALUES (?, ?, ?)",
                    [
                        name.databaseValue, number.databaseValue,
                        try seal(shard, table: name, number: number, keys: keys)
                            .databaseValue,
                    ])
            }
        }
    }

    /// Adds `changes` to one shard of each table, in the transaction that
    /// made them, under `keys`.
    static func add(_ changes: RecordSetChanges, _ db: any StoreConnection, keys: StoreKeys) throws {
        for (name, tally) in changes.tallies.sorted(by: { $0.key < $1.key }) where !tally.isZero {
            let select = "SELECT shard, state FROM \(table) WHERE tbl = ?"
            var rows = try changes.reserved[name]?() ?? db.rows(pickSQL(db.dialect), [name.databaseValue])
            if db.dialect == .postgres {
                if rows.isEmpty {
                    // Every shard is taken: wait for one.
                    rows = try db.rows(
                        "\(select) AND shard = ? FOR UPDATE",
                        [name.databaseValue, Int.random(in: 0..<shards).databaseValue])
                }
            }
            guard let row = rows.first, let number = row["shard"].flatMap(Int.fromDatabaseValue) else {
                throw CofferError(
                    .stateAuthenticationFailed,
                    "the record-set digest of \(name) is missing rows: they were removed without the store's keys")
            }
            var shard = try open(row["state"], table: name, number: number, keys: keys)
            shard.tally = shard.tally + tally
            shard.sequence &+= 1
            try db.executeDeferred(
                "UPDATE \(table) SET state = ? WHERE tbl = ? AND shard = ?",
                [
                    try seal(shard, table: name, number: number, keys: keys).databaseValue, name.databaseValue,
                    number.databaseValue,
                ])
        }
    }

    /// Every shard of `table` as stored, opened; a shard missing, doubled,
    /// out of range or not opening is thrown.
    static func shards(of name: String, _ db: any StoreConnection, keys: StoreKeys) throws -> [Shard] {
        var found: [Int: Shard] = [:]
        for row in try db.rows("SELECT shard, state FROM \(table) WHERE tbl = ?", [name.databaseValue]) {
            guard let number = row["shard"].flatMap(Int.fromDatabaseValue), (0..<shards).contains(number),
                found[number] == nil
            else {
                throw CofferError(
                    .stateAuthenticationFailed, "the record-set digest of \(name) holds a row the store did not write")
            }
            found[number] = try open(row["state"], table: name, number: number, keys: keys)
        }
        guard found.count == shards else {
            throw CofferError(
                .stateAuthenticationFailed,
                "the record-set digest of \(name) has \(found.count) of its \(shards) rows: some were removed without the store's keys"
            )
        }
        return (0..<shards).map { found[$0]! }
    }

    /// Seals every shard again under `keys` (their key ring changed), each
    /// opened under `old`; nothing in them changes.
    static func reseal(_ db: any StoreConnection, tables: [String], old: StoreKeys, keys: StoreKeys) throws {
        for name in tables {
            for (number, shard) in try shards(of: name, db, keys: old).enumerated() {
                try db.execute(
                    "UPDATE \(table) SET state = ? WHERE tbl = ? AND shard = ?",
                    [
                        try seal(shard, table: name, number: number, keys: keys).databaseValue, name.databaseValue,
                        number.databaseValue,
                    ])
            }
        }
    }

    /// The tally of `table`'s rows as they stand, read `pageSize` rows at
    /// a time in primary key order inside the caller's transaction.
    static func tally(
        of table: StoreSchema.Table, _ db: any StoreConnection, state: StoreState, pageSize: Int = 5000
    ) throws -> RecordSetTally {
        var tally = RecordSetTally()
        let order = StoreSQL.quoted(table.primaryKey)
        let columns =
            ([table.primaryKey] + table.fields.filter(\.sealed).map(\.name))
            + (StoreSQL.hasLife(table) ? [StoreSQL.lifeColumn] : [])
        let select =
            "SELECT \(columns.map(StoreSQL.quoted).joined(separator: ", ")) FROM \(StoreSQL.quoted(table.name))"
        var after: DatabaseValue?
        while true {
            let rows =
                try after.map { try db.rows("\(select) WHERE \(order) > ? ORDER BY \(order) LIMIT \(pageSize)", [$0]) }
                ?? db.rows("\(select) ORDER BY \(order) LIMIT \(pageSize)")
            guard let last = rows.last else { return tally }
            after = last[table.primaryKey] ?? .null
            guard let plan = try state.recordSet?.table(table, migrating: state.migrating(table.name)) else {
                return tally
            }
            let elements = try RecordStore.parallelMap(rows) { row in
                plan.element(key: row[table.primaryKey] ?? .null, life: row[StoreSQL.lifeColumn] ?? .null) {
                    row[plan.fields[$0]] ?? .null
                }
            }
            for element in elements { tally.add(element) }
        }
    }
}

extension StoreState {
    /// Makes the record-set key and the digest of every table as its rows
    /// stand now, in the caller's transaction: for a new store, an adopted
    /// database, or a store made before the digest (at its first open by
    /// this version, trusting the rows as the epoch is trusted on first use).
    mutating func startRecordSet(_ db: any StoreConnection, sequence: UInt64 = 0) throws {
        recordSet = RecordSetKey(root: SymmetricKey(size: .bits256), storeID: keys.storeID)
        var tallies: [String: RecordSetTally] = [:]
        for table in schema.tables { tallies[table.name] = try RecordSetDigest.tally(of: table, db, state: self) }
        if schema.hasTenants { tallies[TenantKeys.table] = try TenantKeys.tally(db, state: self) }
        try RecordSetDigest.start(schema.digestNames, tallies: tallies, sequence: sequence, db, keys: keys)
    }
}

extension RecordStore {
    /// Gives a store made before the record-set digest its digest (once).
    func keepRecordSet() throws {
        guard state.withLock({ $0.recordSet == nil }) else { return }
        try change { db, state in
            if state.recordSet == nil { try state.startRecordSet(db) }
        }
    }

    /// Takes the rows as they stand (`accept-rollback`): every table's
    /// digest counted again under a new record-set key, its shards written
    /// under the key ring the accepted state holds.
    ///
    /// Its shards start at a sequence number above any they held (those
    /// that still open) and above the clock in microseconds, so that the
    /// state is newer than any an anchor holds and every other process
    /// takes it as such, while an anchor elsewhere that saw a state before
    /// the restore still finds the numbers moving forward.
    func countRecordSetAgain() throws {
        try change { db, state in
            var sequence = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
            if state.recordSet != nil {
                for name in state.schema.digestNames {
                    guard let shards = try? RecordSetDigest.shards(of: name, db, keys: state.keys) else {
                        continue
                    }
                    sequence = max(sequence, (shards.map(\.sequence).max() ?? 0) &+ 1)
                }
            }
            try db.execute("DROP TABLE IF EXISTS \(RecordSetDigest.table)")
            try state.startRecordSet(db, sequence: sequence)
        }
    }
}

/// The shards one set of ``StoreKeys`` last sealed or opened, each with
/// its stored bytes, and the context each shard is sealed under. A shard
/// read back byte for byte as this process sealed or opened it under these
/// keys is the same shard, so a writer that meets its own last shard skips
/// opening it — the AEAD and its key schedule — on every commit. Keys that
/// change (a rotation, a key disabled) are a new `StoreKeys`, with an
/// empty cache, so nothing here outlives the keys that authenticated it.
final class RecordSetShardCache: Sendable {
    private struct Name: Hashable, Sendable {
        var table: String
        var number: Int
    }
    private struct Entry: Sendable {
        var sealed: Data
        var shard: RecordSetDigest.Shard
    }
    private let entries = Locked([Name: Entry]())
    private let contexts = Locked([Name: SealingContext]())

    func shard(_ table: String, _ number: Int, sealed: Data) -> RecordSetDigest.Shard? {
        entries.withLock { entries in
            entries[Name(table: table, number: number)].flatMap { $0.sealed == sealed ? $0.shard : nil }
        }
    }

    func keep(_ shard: RecordSetDigest.Shard, _ table: String, _ number: Int, sealed: Data) {
        entries.withLock { $0[Name(table: table, number: number)] = Entry(sealed: sealed, shard: shard) }
    }

    func context(_ table: String, _ number: Int, storeID: [UInt8]) throws -> SealingContext {
        let name = Name(table: table, number: number)
        if let known = contexts.withLock({ $0[name] }) { return known }
        let made = try RecordSetDigest.context(storeID: storeID, table: table, shard: number)
        contexts.withLock { $0[name] = made }
        return made
    }
}
