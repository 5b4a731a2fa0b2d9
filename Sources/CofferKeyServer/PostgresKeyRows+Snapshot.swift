import Foundation
import HTTPTypes
import PostgresNIO

extension PostgresKeyRows {
    /// A batch of releases in two statements however many it holds, each
    /// committing on its own: the first records the batch's DPoP proofs
    /// and reads every key of the batch; the second appends the released
    /// ones to the audit chain (``append(_:_:now:)``), and only once it has
    /// committed are the keys answered. A proof recorded by a batch whose
    /// append then fails stays spent: its request fails, and a client's
    /// next request carries a new proof.
    func release(_ requests: [ReleaseRequest], now: Int64) async throws -> [Result<StoredVersion?, any Error>] {
        try await database.session { db in
            let (recorded, snapshots) = try await Self.snapshots(db, requests)
            let fresh = KeySnapshot.spend(requests) { recorded.contains($0) }
            let (results, audit) = KeySnapshot.outcomes(Array(zip(requests, snapshots)), fresh: fresh, now: now)
            try await Self.append(db, audit, now: now)
            return results
        }
    }

    /// The read of schema version 5, a function so that each connection
    /// plans it once (PL/pgSQL keeps its statements' plans). Proofs are
    /// empty for requests without one; version 0 is the latest.
    static let releaseFunction = """
        CREATE FUNCTION coffer_release_read(realms text[], subjects text[], devices text[], purposes text[],
          versions int4[], proofs bytea[], expiries bigint[])
        RETURNS TABLE (key_shred_at bigint, key_shredded boolean, key_minimum integer, key_version integer,
          key_wrapped bytea, proof_recorded boolean)
        LANGUAGE plpgsql AS $$
        BEGIN
          RETURN QUERY
          WITH recorded AS (
            INSERT INTO dpop_proofs (hash, expires)
            SELECT p.hash, p.expires FROM unnest(proofs, expiries) AS p (hash, expires) WHERE length(p.hash) > 0
            ON CONFLICT DO NOTHING RETURNING dpop_proofs.hash)
          SELECT s.shred_at, s.shredded, f.minimum, k.version, k.wrapped,
            length(r.proof) > 0 AND EXISTS (SELECT 1 FROM recorded WHERE recorded.hash = r.proof)
          FROM unnest(realms, subjects, devices, purposes, versions, proofs)
            WITH ORDINALITY AS r (realm, subject, device, purpose, version, proof, position)
          LEFT JOIN subjects s ON s.realm = r.realm AND s.subject = r.subject
          LEFT JOIN key_floors f ON f.realm = r.realm AND f.subject = r.subject AND f.device = r.device
            AND f.purpose = r.purpose
          LEFT JOIN LATERAL (SELECT keys.version, keys.wrapped FROM keys WHERE keys.realm = r.realm
            AND keys.subject = r.subject AND keys.device = r.device AND keys.purpose = r.purpose
            AND (r.version = 0 OR keys.version = r.version)
            ORDER BY keys.version DESC LIMIT 1) k ON true
          ORDER BY r.position;
        END $$
        """

    /// Records the requests' proofs and reads each request's key, in the
    /// requests' order, in one statement (so in one snapshot); answers
    /// which proofs this statement recorded. The proofs' primary key
    /// settles a race: of two replicas seeing one proof at once, one
    /// inserts it and the other waits for that commit, then finds the row.
    static func snapshots(_ db: PostgresConnection, _ requests: [ReleaseRequest]) async throws
        -> (recorded: Set<Data>, snapshots: [KeySnapshot])
    {
        // Version 0: the latest. A version beyond int4 names no row.
        let versions = requests.map { Int32(exactly: $0.version ?? 0) ?? -1 }
        // No proof: an empty hash (a proof's is 32 bytes), never recorded.
        let proofs = requests.map { ByteBuffer(bytes: $0.proof?.hash ?? Data()) }
        let expiries = requests.map { $0.proof?.expires ?? 0 }
        let rows = try await db.run(
            """
            SELECT * FROM coffer_release_read(\(requests.map(\.name.realm))::text[],
              \(requests.map(\.name.subject))::text[], \(requests.map(\.name.device))::text[],
              \(requests.map(\.name.purpose))::text[], \(versions)::int4[], \(proofs)::bytea[], \(expiries)::bigint[])
            """)
        var snapshots: [KeySnapshot] = []
        var recorded: Set<Data> = []
        snapshots.reserveCapacity(requests.count)
        for try await (shredAt, shredded, minimum, version, wrapped, isRecorded) in rows.decode(
            (Int64?, Bool?, Int?, Int?, Data?, Bool).self)
        {
            guard snapshots.count < requests.count else { break }
            if isRecorded, let proof = requests[snapshots.count].proof { recorded.insert(proof.hash) }
            snapshots.append(
                KeySnapshot(
                    shredAt: shredAt, shredded: shredded ?? false, minimum: minimum ?? 1,
                    stored: version.flatMap { version in wrapped.map { StoredVersion(version: version, wrapped: $0) } }
                ))
        }
        guard snapshots.count == requests.count else {
            throw Problem(.internalServerError, "database-error", "the database answered the wrong number of rows")
        }
        return (recorded, snapshots)
    }
}
