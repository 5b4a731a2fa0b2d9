import Foundation
import HTTPTypes
import PostgresNIO

extension PostgresKeyRows {
    /// A batch of releases in one transaction of a few round trips however
    /// many it holds: one statement records the batch's DPoP proofs, one
    /// reads every key of the batch, then the released ones are appended to
    /// the audit chain (the lock, the chain's head, one insert) and the
    /// transaction commits. Replicas that release at once take the audit
    /// lock in turn, a batch at a time.
    func release(_ requests: [ReleaseRequest], now: Int64) async throws -> [Result<StoredVersion?, any Error>] {
        try await database.transaction { db in
            let recorded = try await Self.recordProofs(db, requests.compactMap(\.proof))
            let fresh = KeySnapshot.spend(requests) { recorded.contains($0) }
            let snapshots = try await Self.snapshots(db, requests)
            let (results, audit) = KeySnapshot.outcomes(Array(zip(requests, snapshots)), fresh: fresh, now: now)
            try await Self.append(db, audit, now: now)
            return results
        }
    }

    /// The proofs this statement recorded. The primary key settles a race:
    /// of two replicas seeing one proof at once, one inserts it and the
    /// other waits for that commit, then finds the row.
    static func recordProofs(_ db: PostgresConnection, _ proofs: [ProofUse]) async throws -> Set<Data> {
        guard !proofs.isEmpty else { return [] }
        var recorded: Set<Data> = []
        for try await hash in try await db.run(
            """
            INSERT INTO dpop_proofs (hash, expires)
            SELECT * FROM unnest(\(proofs.map { ByteBuffer(bytes: $0.hash) })::bytea[], \(proofs.map(\.expires))::bigint[])
            ON CONFLICT DO NOTHING RETURNING hash
            """
        ).decode(Data.self) { recorded.insert(hash) }
        return recorded
    }

    /// Each request's key, in the requests' order, in one statement (so in
    /// one snapshot).
    static func snapshots(_ db: PostgresConnection, _ requests: [ReleaseRequest]) async throws -> [KeySnapshot] {
        // Version 0: the latest. A version beyond int4 names no row.
        let versions = requests.map { Int32(exactly: $0.version ?? 0) ?? -1 }
        let rows = try await db.run(
            """
            SELECT s.shred_at, s.shredded, f.minimum, k.version, k.wrapped
            FROM unnest(\(requests.map(\.name.realm))::text[], \(requests.map(\.name.subject))::text[],
              \(requests.map(\.name.device))::text[], \(requests.map(\.name.purpose))::text[], \(versions)::int4[])
              WITH ORDINALITY AS r (realm, subject, device, purpose, version, position)
            LEFT JOIN subjects s ON s.realm = r.realm AND s.subject = r.subject
            LEFT JOIN key_floors f ON f.realm = r.realm AND f.subject = r.subject AND f.device = r.device
              AND f.purpose = r.purpose
            LEFT JOIN LATERAL (SELECT version, wrapped FROM keys WHERE realm = r.realm AND subject = r.subject
              AND device = r.device AND purpose = r.purpose AND (r.version = 0 OR version = r.version)
              ORDER BY version DESC LIMIT 1) k ON true
            ORDER BY r.position
            """)
        var snapshots: [KeySnapshot] = []
        snapshots.reserveCapacity(requests.count)
        for try await (shredAt, shredded, minimum, version, wrapped) in rows.decode(
            (Int64?, Bool?, Int?, Int?, Data?).self)
        {
            snapshots.append(
                KeySnapshot(
                    shredAt: shredAt, shredded: shredded ?? false, minimum: minimum ?? 1,
                    stored: version.flatMap { version in wrapped.map { StoredVersion(version: version, wrapped: $0) } }
                ))
        }
        guard snapshots.count == requests.count else {
            throw Problem(.internalServerError, "database-error", "the database answered the wrong number of rows")
        }
        return snapshots
    }
}
