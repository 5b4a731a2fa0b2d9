import Coffer
import Foundation
import GRDB

/// A long job under way on a store (docs/store.md, "Jobs"): which kind,
/// the tables it has left, and the primary key of the last row it
/// finished. It lives in `coffer_meta` and moves forward in the same
/// transaction as each batch it writes, so a job stopped anywhere, even by
/// `kill -9`, resumes at the next row with nothing done twice.
public struct StoreJob: Codable, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Codable, Sendable { case rotate, reindex, migrate }

    public var kind: Kind
    /// Tables still to go through, the current one first.
    public var tables: [String]
    /// The encoded primary key of the last row done in the current table.
    var after: [UInt8]?
    /// Rows gone through so far, over all tables.
    public var rowsDone: Int
    /// Cells or index entries rewritten so far.
    public var changed: Int
    /// `migrate`: the field being sealed.
    public var field: String?
    /// `rotate`: the key every cell moves to. `reindex`: the index version.
    public var target: UInt32
    /// `reindex`: the index versions that go when the job ends.
    public var retiring: [UInt16]

    public var description: String {
        let what =
            switch kind {
            case .rotate: "re-sealing every cell under key \(String(format: "%08x", target))"
            case .reindex: "moving every blind index to version \(target)"
            case .migrate: "sealing \(tables.first ?? "?").\(field ?? "?")"
            }
        return "\(kind.rawValue) job (\(what)), \(rowsDone) rows done"
    }

    init(kind: Kind, tables: [String], field: String? = nil, target: UInt32, retiring: [UInt16] = []) {
        self.kind = kind
        self.tables = tables
        self.rowsDone = 0
        self.changed = 0
        self.field = field
        self.target = target
        self.retiring = retiring
    }

    init(json: [UInt8]) throws {
        do { self = try JSONDecoder().decode(StoreJob.self, from: Data(json)) } catch {
            throw CofferError(.malformed, "the store's job record is damaged: \(error)")
        }
    }

    func json() throws -> [UInt8] { Array(try JSONEncoder().encode(self)) }

    /// The job the store's state names in `db`, once the state verified
    /// under `keys` (a job row changed or removed without them is refused).
    static func fetch(_ db: any StoreConnection, keys: StoreKeys, where path: String) throws -> StoreJob? {
        let meta = try StoreState.meta(db)
        try StoreState.verify(meta, storeID: keys.storeID, keyRing: keys.keyRing, where: path)
        return try meta["job"].map { try StoreJob(json: $0) }
    }

    /// The same job at the same place (what a batch read ahead assumed).
    func sameCursor(_ other: StoreJob) -> Bool {
        kind == other.kind && tables == other.tables && after == other.after && target == other.target
    }

    /// Moves the cursor without touching the epoch: only where the job is
    /// changed, not what the store's keys or schema are. The state is
    /// sealed again in the same transaction.
    func store(_ db: any StoreConnection, keys: StoreKeys) throws {
        try db.execute(
            "UPDATE \(StoreSQL.metaTable) SET value = ? WHERE name = 'job'", [Data(try json()).databaseValue])
        try StoreState.reseal(db, keys: keys)
    }
}

/// What a job did.
public struct StoreJobReport: Sendable, CustomStringConvertible {
    public var kind: StoreJob.Kind
    /// Rows gone through, over the job's whole life (resumed runs included).
    public var rows: Int
    /// Cells or index entries rewritten.
    public var changed: Int
    /// True when this run picked up a job an earlier run had begun.
    public var resumed: Bool

    public var description: String {
        "\(kind.rawValue): \(rows) rows, \(changed) rewritten" + (resumed ? " (resumed)" : "")
    }
}

/// One batch of a job: the job as it stood, the state and rows read, and
/// each row's new cells once worked out.
struct JobBatch: Sendable {
    var job: StoreJob
    var state: StoreState
    var rows: [[String: DatabaseValue]] = []
    var changes: [SealedRow] = []
    /// The keys of the rows' tenants, for a table kept per tenant, read
    /// with the rows (the rows are worked out off the connection).
    var resolved: ResolvedTenantKeys = [:]

    init(
        job: StoreJob, state: StoreState, rows: [[String: DatabaseValue]] = [], changes: [SealedRow] = [],
        resolved: ResolvedTenantKeys = [:]
    ) {
        self.job = job
        self.state = state
        self.rows = rows
        self.changes = changes
        self.resolved = resolved
    }

    /// The batch of `rows` of `table` read through `db`, with their tenants' keys.
    init(
        job: StoreJob, state: StoreState, rows: [[String: DatabaseValue]], table: StoreSchema.Table,
        _ db: any StoreConnection
    ) throws {
        self.init(
            job: job, state: state, rows: rows,
            resolved: table.tenant == nil ? [:] : try state.tenantKeys(of: rows, table: table, db))
    }

    func workedOut(
        _ rewrite:
            @Sendable (StoreState, StoreSchema.Table, [String: DatabaseValue], ResolvedTenantKeys) throws -> SealedRow
    ) throws -> JobBatch {
        guard let name = job.tables.first, !rows.isEmpty else { return self }
        let table = try state.schema.table(name)
        var done = self
        done.changes = try RecordStore.parallelMap(rows) { [state, resolved] in
            try rewrite(state, table, $0, resolved)
        }
        return done
    }
}
