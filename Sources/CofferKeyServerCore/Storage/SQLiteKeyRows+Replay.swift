#if Server
import Coffer
import CofferStore
import Foundation
import GRDB

/// The DPoP replay cache on SQLite: an append-only log in the database,
/// looked up through a set in memory.
///
/// A table keyed by the proofs' random hashes takes each new proof into
/// another leaf page of its B-tree, so a batch of a dozen proofs wrote a
/// dozen 4 KiB pages into the WAL (and at the next checkpoint into as
/// many places in the file), and the commits' syncs slowed: in four runs
/// each, a median of 0.86–1.18 ms against 0.62–0.77 ms, and 59–62 syncs
/// against 1–7 over 10 ms (docs/performance.md). `dpop_log` is a rowid
/// table: a batch appends to its last page, and to the end of the index
/// by expiry that the sweep deletes by.
///
/// Whether a proof was spent is asked of the set. Each release transaction
/// first reads the rows appended since it last looked, by this process or
/// another on the same file (`seq` is AUTOINCREMENT, so never reused), and
/// it does so under SQLite's write lock, which orders every process's
/// appends; so a proof one process records is known to the next
/// transaction of any other. A process reads the whole log (the proofs
/// not yet swept: a few minutes' worth) when it opens the database.
/// The set takes what a transaction appended only once it committed, and
/// holds 32 bytes a proof (its hash in the set and in a list by expiry)
/// before the set's spare capacity.
final class SpentProofs: Sendable {
    /// The first 128 bits of a replay hash: the chance that two of a few
    /// minutes' proofs share them is below 2⁻⁸⁰.
    struct Hash: Hashable, Sendable {
        let high: UInt64
        let low: UInt64

        init(_ data: Data) throws {
            guard data.count == 32 else { throw SQLiteKeyRows.malformed("DPoP proof hash") }
            var high: UInt64 = 0
            var low: UInt64 = 0
            for (index, byte) in data.enumerated() where index < 16 {
                if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
            }
            (self.high, self.low) = (high, low)
        }
    }

    /// What a committed transaction adds: the rows it read and appended,
    /// and the last `seq` among them.
    struct Pending: Sendable {
        fileprivate var rows: [(Hash, Int64)] = []
        fileprivate var seq: Int64
    }

    private struct State: Sendable {
        var hashes: Set<Hash> = []
        var byExpiry: [Int64: [Hash]] = [:]
        /// The last log row the set holds.
        var seq: Int64 = 0
        /// When expired hashes were last dropped.
        var pruned: Int64 = 0
    }

    private let state = Locked(State())

    /// How many proofs the set holds (tests).
    var count: Int { state.withLock { $0.hashes.count } }

    /// Reads the whole log into the set, when the store opens, through a
    /// cursor that decodes each row in place: 600,000 rows read at the
    /// first release as dictionaries took 2.4 s on the writer and left
    /// the process 274 MB larger. Rows that expired are dropped at the
    /// first commit.
    func load(_ db: Database) throws {
        var loaded = State()
        try Self.rows(after: 0, db) { seq, hash, expires in
            loaded.seq = seq
            if loaded.hashes.insert(hash).inserted { loaded.byExpiry[expires, default: []].append(hash) }
        }
        state.withLock { $0 = loaded }
    }

    /// Reads the log's rows after `seq`, in order, through a cursor that
    /// decodes each in place; a malformed row is `database-error`.
    private static func rows(
        after seq: Int64, _ db: Database, _ body: (_ seq: Int64, _ hash: Hash, _ expires: Int64) throws -> Void
    ) throws {
        let rows = try Row.fetchCursor(
            db, sql: "SELECT seq, hash, expires FROM dpop_log WHERE seq > ? ORDER BY seq", arguments: [seq])
        while let row = try rows.next() {
            // A table rebuilt without its types may hold text or NULL.
            guard let seq = Int64.fromDatabaseValue(row[0] as DatabaseValue),
                let expires = Int64.fromDatabaseValue(row[2] as DatabaseValue),
                let hash = try row.withUnsafeData(atIndex: 1, { data in try data.map(Hash.init) })
            else { throw SQLiteKeyRows.malformed("DPoP log row") }
            try body(seq, hash, expires)
        }
    }

    /// In a release's transaction: reads the log's new rows, appends the
    /// proofs of `proofs` not spent before (nor earlier in the batch), and
    /// returns their hashes, with what ``commit(_:now:)`` adds to the set
    /// once the transaction is committed.
    func record(_ proofs: [ProofUse], _ connection: SQLiteStoreConnection) throws -> (
        fresh: Set<Data>, pending: Pending
    ) {
        let seq = state.withLock { $0.seq }
        var pending = Pending(seq: seq)
        try Self.rows(after: seq, connection.db) { seq, hash, expires in
            pending.rows.append((hash, expires))
            pending.seq = seq
        }
        let read = Set(pending.rows.map(\.0))
        let hashes = try proofs.map { try Hash($0.hash) }
        let spent = state.withLock { state in hashes.map { state.hashes.contains($0) } }
        var fresh: Set<Data> = []
        var appended: [[DatabaseValue]] = []
        for (index, proof) in proofs.enumerated() {
            guard !spent[index], !read.contains(hashes[index]), fresh.insert(proof.hash).inserted else { continue }
            pending.rows.append((hashes[index], proof.expires))
            appended.append([proof.hash.databaseValue, proof.expires.databaseValue])
        }
        if !appended.isEmpty {
            try connection.execute("INSERT INTO dpop_log (hash, expires) VALUES (?, ?)", eachOf: appended)
            pending.seq = connection.db.lastInsertedRowID
        }
        return (fresh, pending)
    }

    /// Adds a committed transaction's rows, and drops hashes that expired
    /// (at most once a second).
    func commit(_ pending: Pending, now: Int64) {
        state.withLock { state in
            for (hash, expires) in pending.rows where state.hashes.insert(hash).inserted {
                state.byExpiry[expires, default: []].append(hash)
            }
            state.seq = max(state.seq, pending.seq)
            guard now > state.pruned else { return }
            state.pruned = now
            for expires in state.byExpiry.keys.filter({ $0 <= now }) {
                for hash in state.byExpiry.removeValue(forKey: expires) ?? [] { state.hashes.remove(hash) }
            }
        }
    }
}

extension SQLiteKeyRows {
    static func registerReplayLogMigration(_ migrator: inout DatabaseMigrator) {
        // The proofs recorded before it move to the log, in the order they
        // expire.
        migrator.registerMigration("v6 replay log") { db in
            try db.execute(
                sql: """
                    CREATE TABLE dpop_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, hash BLOB NOT NULL,
                      expires INTEGER NOT NULL) STRICT;
                    CREATE INDEX dpop_log_expires ON dpop_log (expires);
                    INSERT INTO dpop_log (hash, expires) SELECT hash, expires FROM dpop_proofs ORDER BY expires, hash;
                    DROP TABLE dpop_proofs;
                    """)
        }
    }

    /// Deletes the expired rows, ``forgetBatch`` a transaction. Proofs
    /// are signed at about the time they are used, so the expiry index
    /// grows at its end as the log does.
    func forgetSpentProofs(before now: Int64) async throws {
        while try await pool.write({ db in
            try db.execute(
                sql: "DELETE FROM dpop_log WHERE seq IN (SELECT seq FROM dpop_log WHERE expires <= ? LIMIT ?)",
                arguments: [now, Self.forgetBatch])
            return db.changesCount
        }) == Self.forgetBatch {}
    }
}
#endif
