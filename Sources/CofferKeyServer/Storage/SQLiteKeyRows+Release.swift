#if Server
import Foundation
import GRDB

extension SQLiteKeyRows {
    /// Reads every key of the batch and appends the releases in one write
    /// transaction: SQLite answers the reads (a few indexed lookups each)
    /// from its page cache in microseconds.
    func release(_ requests: [ReleaseRequest], now: Int64) async throws -> [Result<StoredVersion?, any Error>] {
        try await pool.write { db in
            var recorded: Set<Data> = []
            let insert = try db.cachedStatement(
                sql: "INSERT INTO dpop_proofs (hash, expires) VALUES (?, ?) ON CONFLICT DO NOTHING")
            for proof in requests.compactMap(\.proof) {
                try insert.execute(arguments: [proof.hash, proof.expires])
                if db.changesCount == 1 { recorded.insert(proof.hash) }
            }
            let fresh = KeySnapshot.spend(requests) { recorded.contains($0) }
            let snapshots = try requests.map { ($0, try Self.snapshot(db, $0.name, version: $0.version)) }
            let (results, audit) = KeySnapshot.outcomes(snapshots, fresh: fresh, now: now)
            try Self.append(db, audit, now: now)
            return results
        }
    }

    /// The subject's shred state, the key's minimum version and the wanted
    /// version (nil: the latest), in one statement.
    static func snapshot(_ db: Database, _ name: KeyName, version: Int?) throws -> KeySnapshot {
        let key =
            version == nil
            ? "SELECT version, wrapped FROM keys WHERE realm = ?1 AND subject = ?2 AND device = ?3 AND purpose = ?4 ORDER BY version DESC LIMIT 1"
            : "SELECT version, wrapped FROM keys WHERE realm = ?1 AND subject = ?2 AND device = ?3 AND purpose = ?4 AND version = ?5"
        let sql = """
            SELECT s.shred_at, s.shredded, f.minimum, k.version, k.wrapped FROM (SELECT 1)
            LEFT JOIN subjects s ON s.realm = ?1 AND s.subject = ?2
            LEFT JOIN key_floors f ON f.realm = ?1 AND f.subject = ?2 AND f.device = ?3 AND f.purpose = ?4
            LEFT JOIN (\(key)) k
            """
        var arguments: StatementArguments = [name.realm, name.subject, name.device, name.purpose]
        if let version { arguments += [version] }
        // Columns by position (shred_at, shredded, minimum, version,
        // wrapped): a lookup by name costs a case-folded search per column.
        let row = try Row.fetchOne(db.cachedStatement(sql: sql), arguments: arguments)!
        let version: Int? = row[3]
        return KeySnapshot(
            shredAt: row[0], shredded: (row[1] as Int64? ?? 0) != 0, minimum: row[2] ?? 1,
            stored: version.map { StoredVersion(version: $0, wrapped: row[4]) })
    }
}
#endif
