import Coffer
import Crypto
import Foundation
import GRDB

/// How far a job is: rows gone through and rows in all (the total counted
/// when the run began; writers may add more meanwhile). A job calls its
/// `progress` after each batch it has committed; throwing from it stops
/// the job there, and the next call of the same job resumes it.
public struct StoreProgress: Sendable {
    public var done: Int
    public var total: Int
}

extension RecordStore {
    /// Re-seals every sealed cell under a new primary key, then disables
    /// every older key, so a copy of the key ring made before the rotation
    /// opens nothing written from now on and no cell needs an old key.
    /// Writers keep writing throughout (they seal under the new primary
    /// from the moment the job begins); a run stopped anywhere resumes
    /// where it stopped when called again.
    @discardableResult
    public func rotateKeys(batchSize: Int = 1000, progress: (StoreProgress) throws -> Void = { _ in }) throws
        -> StoreJobReport
    {
        let (job, resumed) = try begin(.rotate) { _, state in
            let id = try state.ringFile.update { try $0.rotate() }
            state.ringFile.generation += 1
            state.keys = try state.keys.with(keyRing: state.ringFile.keyRing)
            // Tables kept per tenant have their cells under the tenants'
            // keys, not the ring: the tenants' key rows are what the ring
            // seals there, and they are sealed again at the end.
            return StoreJob(
                kind: .rotate, tables: state.schema.tables.filter { $0.tenant == nil }.map(\.name), target: id)
        }
        return try run(job, resumed: resumed, batchSize: batchSize, progress: progress) { state, table, row, _ in
            var changes = SealedRow()
            for field in table.fields where field.sealed {
                guard case .blob(let sealed) = (row[field.name] ?? .null).storage,
                    try SealedValue.keyID(of: sealed) != job.target
                else { continue }
                let context = try state.cellContext(field, table: table, row: row)
                changes.columns[field.name] = try state.keys.keyRing.rewrap(sealed, context: context).databaseValue
            }
            return changes
        } finish: { db, state, changes in
            try TenantKeys.rewrapAll(db, state: state, changes: changes)
            for key in state.ringFile.keyRing.keys where key.state == .active {
                try state.ringFile.update { try $0.disable(key.id) }
            }
            state.ringFile.generation += 1
            state.keys = try state.keys.with(keyRing: state.ringFile.keyRing)
        }
    }

    /// Moves every blind index to a new index root version. Queries cover
    /// the old and the new version until the job ends, writers write the
    /// new one from the start, and the old roots are dropped at the end.
    @discardableResult
    public func reindex(batchSize: Int = 1000, progress: (StoreProgress) throws -> Void = { _ in }) throws
        -> StoreJobReport
    {
        let (job, resumed) = try begin(.reindex) { _, state in
            let old = state.keys.indexVersions
            guard let next = old.last.flatMap({ $0 < UInt16.max ? $0 + 1 : nil }) else {
                throw CofferError(.refused, "the store has used every index version")
            }
            var roots = Dictionary(uniqueKeysWithValues: try old.map { ($0, try state.keys.root($0)) })
            roots[next] = SymmetricKey(size: .bits256)
            state.keys = try state.keys.with(indexRoots: roots, current: next)
            // A tenant's index values are under its own root, not the store's.
            return StoreJob(
                kind: .reindex, tables: state.schema.tables.filter { $0.tenant == nil }.map(\.name),
                target: UInt32(next), retiring: old)
        }
        let target = UInt16(job.target)
        return try run(job, resumed: resumed, batchSize: batchSize, progress: progress) { state, table, row, _ in
            let stale = table.fields.flatMap(\.indexes).filter { index in
                if index.tokens != nil { return true }
                guard case .blob(let stored) = (row[index.name] ?? .null).storage else { return false }
                return stored.count < 2
                    || UInt16(stored[stored.startIndex]) << 8 | UInt16(stored[stored.startIndex + 1]) != target
            }
            guard !stale.isEmpty else { return SealedRow() }
            let needed = Set(
                table.fields.filter { field in
                    field.indexes.contains { index in stale.contains { $0.name == index.name } }
                }
                .flatMap { field in [field.name] + field.indexes.flatMap(\.with) })
            let record = try state.record(from: row, table: table, opening: needed, nil)
            var changes = SealedRow()
            for field in table.fields {
                for index in field.indexes where stale.contains(where: { $0.name == index.name }) {
                    if index.tokens != nil {
                        changes.tokens[index.name] = try state.tokenEntries(
                            index, of: field, in: record, table: table, version: target)
                    } else {
                        changes.columns[index.name] = try state.indexValue(
                            index, of: field, in: record, table: table, version: target)
                    }
                }
            }
            return changes
        } finish: { _, state, _ in
            var roots: [UInt16: SymmetricKey] = [:]
            for version in state.keys.indexVersions where !job.retiring.contains(version) {
                roots[version] = try state.keys.root(version)
            }
            state.keys = try state.keys.with(indexRoots: roots)
        }
    }

    /// Starts `kind`, or picks up the job of that kind an earlier run left
    /// (when `same` accepts it). Another kind of job under way is `refused`.
    func begin(
        _ kind: StoreJob.Kind, same: (StoreJob) -> Bool = { _ in true },
        make: (any StoreConnection, inout StoreState) throws -> StoreJob
    ) throws -> (StoreJob, resumed: Bool) {
        try change { db, state in
            if let pending = try StoreJob.fetch(db, keys: state.keys, where: path) {
                guard pending.kind == kind, same(pending) else {
                    throw CofferError(
                        .refused,
                        "a \(pending) is under way; finish it first (run coffer store \(pending.kind.rawValue) again)")
                }
                state.job = pending
                return (pending, true)
            }
            let job = try make(db, &state)
            state.job = job
            return (job, false)
        }
    }

    /// Goes through the job's tables in primary key order, `batchSize`
    /// rows at a time: reads a batch, works out each row's new columns on
    /// every core (`rewrite`), then in one write transaction stores them
    /// and moves the job's cursor. A row whose sealed cells a writer
    /// changed in between is left as the writer wrote it (it wrote under
    /// the job's new state already). At the end `finish` changes the state
    /// and the job goes.
    func run(
        _ started: StoreJob, resumed: Bool, batchSize: Int, progress: (StoreProgress) throws -> Void,
        rewrite:
            @escaping @Sendable (StoreState, StoreSchema.Table, [String: DatabaseValue], ResolvedTenantKeys) throws
            -> SealedRow,
        finish: (any StoreConnection, inout StoreState, RecordSetChanges) throws -> Void
    ) throws -> StoreJobReport {
        guard batchSize > 0 else { throw CofferError(.invalidArgument, "a batch holds at least one row") }
        let total = try read { work in
            let (db, state) = (work.db, work.state)
            var total = started.rowsDone
            for (position, name) in started.tables.enumerated() {
                let table = try state.schema.table(name)
                var sql = "SELECT count(*) FROM \(StoreSQL.quoted(name))"
                var arguments: [DatabaseValue] = []
                if position == 0, let after = started.after {
                    sql += " WHERE \(StoreSQL.quoted(table.primaryKey)) > ?"
                    arguments = [
                        try StoreSQL.databaseValue(
                            StoreValue(encoded: after), for: table.field(table.primaryKey)!, table: name)
                    ]
                }
                total += Int(try db.integer(sql, arguments) ?? 0)
            }
            return total
        }
        var last = started
        // While one batch is written, the next is read and worked out on
        // the other cores (a read transaction beside the write: WAL).
        var ahead: Pending<JobBatch>?
        defer { _ = try? ahead?.wait() }
        while true {
            let batch: JobBatch?
            if let expected = try ahead?.wait(), expected.job.sameCursor(last) {
                batch = JobBatch(job: last, state: expected.state, rows: expected.rows, changes: expected.changes)
            } else {
                batch = try read { work -> JobBatch? in
                    let (db, state) = (work.db, work.state)
                    guard let job = try StoreJob.fetch(db, keys: state.keys, where: path), job.kind == started.kind
                    else { return nil }
                    guard let name = job.tables.first else { return JobBatch(job: job, state: state) }
                    let table = try state.schema.table(name)
                    let rows = try fetchBatch(db, table: table, after: job.after, batchSize)
                    return try JobBatch(job: job, state: state, rows: rows, table: table, db)
                }.map { try $0.workedOut(rewrite) }
            }
            ahead = nil
            guard let batch else { break }
            let (job, state, rows) = (batch.job, batch.state, batch.rows)
            last = job
            if job.tables.isEmpty {
                try changeWritingRows { db, state, changes in
                    guard try StoreJob.fetch(db, keys: state.keys, where: path) == job else { return }
                    try finish(db, &state, changes)
                    state.job = nil
                }
                break
            }
            let table = try state.schema.table(job.tables[0])
            var predicted = job
            if let lastRow = rows.last {
                let key = try StoreSQL.storeValue(
                    lastRow[table.primaryKey] ?? .null, for: table.field(table.primaryKey)!, table: table.name)
                predicted.after = key.encoded
                predicted.rowsDone += rows.count
                let following = predicted
                ahead = Pending { [self] in
                    try read { work -> JobBatch in
                        let (db, state) = (work.db, work.state)
                        let rows = try fetchBatch(db, table: table, after: following.after, batchSize)
                        return try JobBatch(job: following, state: state, rows: rows, table: table, db)
                    }.workedOut(rewrite)
                }
            } else {
                predicted.tables.removeFirst()
                predicted.after = nil
            }
            try write { work in
                let (db, current) = (work.db, work.state)
                guard try StoreJob.fetch(db, keys: current.keys, where: path) == job, current.epoch == state.epoch
                else { return }
                var next = predicted
                work.changes?.reserve(table.name, db)
                next.changed += try store(
                    batch.changes, rows: rows, table: table, state: state, db, recordSet: work.changes)
                try next.store(db, keys: current.keys)
                last = next
            }
            if !rows.isEmpty { try progress(StoreProgress(done: last.rowsDone, total: max(total, last.rowsDone))) }
        }
        if started.kind == .migrate { try checkpoint() }
        // Published after every job, whatever the policy says.
        anchorTick(committed: false, force: true)
        return StoreJobReport(kind: started.kind, rows: last.rowsDone, changed: last.changed, resumed: resumed)
    }

    /// The next rows of `table` after the primary key `after`, every column.
    func fetchBatch(_ db: any StoreConnection, table: StoreSchema.Table, after: [UInt8]?, _ limit: Int) throws
        -> [[String: DatabaseValue]]
    {
        let keyField = table.field(table.primaryKey)!
        let order = StoreSQL.quoted(table.primaryKey)
        let columns = StoreSQL.rowColumns(table, indexes: true).map(StoreSQL.quoted)
        let select = "SELECT \(columns.joined(separator: ", ")) FROM \(StoreSQL.quoted(table.name))"
        if let after {
            let key = try StoreSQL.databaseValue(StoreValue(encoded: after), for: keyField, table: table.name)
            return try db.rows("\(select) WHERE \(order) > ? ORDER BY \(order) LIMIT \(limit)", [key])
        }
        return try db.rows("\(select) ORDER BY \(order) LIMIT \(limit)")
    }

    /// Writes a row's new columns if its sealed cells are still the ones
    /// the job read; false when a writer changed or deleted the row.
    func store(
        _ change: SealedRow, row: [String: DatabaseValue], table: StoreSchema.Table, state: StoreState,
        _ db: any StoreConnection
    ) throws -> Bool {
        let names = change.columns.keys.sorted()
        let sealed = table.fields.filter(\.sealed).map(\.name)
        let key = StoreSQL.quoted(table.primaryKey)
        let assignments = names.isEmpty ? ["\(key) = \(key)"] : names.map { StoreSQL.quoted($0) + " = ?" }
        let sql =
            "UPDATE \(StoreSQL.quoted(table.name)) SET " + assignments.joined(separator: ", ") + " WHERE "
            + ([table.primaryKey] + sealed).map { StoreSQL.quoted($0) + " IS ?" }.joined(separator: " AND ")
        let arguments = names.map { change.columns[$0]! } + ([table.primaryKey] + sealed).map { row[$0] ?? .null }
        guard try db.execute(sql, arguments) > 0 else { return false }
        let primaryKey = try StoreSQL.storeValue(
            row[table.primaryKey] ?? .null, for: table.field(table.primaryKey)!, table: table.name)
        try state.writeTokens(change.tokens, key: primaryKey, table: table, db, replacing: true)
        return true
    }

    /// Copies the WAL into the database file and empties it, so that page
    /// images written before a job (clear values, old cells) leave the WAL.
    func checkpoint() throws {
        try backend.checkpoint()
    }
}
