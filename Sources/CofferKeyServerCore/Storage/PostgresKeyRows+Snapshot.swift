#if Server
import Foundation
import PostgresNIO

extension PostgresKeyRows {
    /// A batch of releases in one statement, and so one transaction,
    /// however many it holds: `coffer_release` records the batch's DPoP
    /// proofs, reads every key, decides which requests release a version
    /// and appends those releases to the audit chain, all inside the
    /// database. The rules it applies are ``KeySnapshot``'s; the server
    /// applies them again to what the statement read, and answers a key
    /// only where the database says it audited that release (a request the
    /// two disagree on fails: nothing leaves unaudited).
    func release(_ requests: [ReleaseRequest], now: Int64) async throws -> [Result<StoredVersion?, any Error>] {
        let links = try await auditLinks.key()
        guard requests.contains(where: { !$0.counts.isEmpty }) else {
            let read = try await database.query(Self.releaseQuery(requests, now: now, links: links)) {
                rows in try await Self.read(rows, count: requests.count)
            }
            return Self.outcomes(requests, read, now: now)
        }
        // With shared rate counts: one transaction raises them (one
        // statement) and releases to the requests they admit (another).
        return try await database.transaction { db in
            let plan = CountPlan(requests.map(\.counts))
            let refused = plan.refusals(try await Self.raise(plan, db))
            let admitted = zip(requests, refused).filter { $0.1 == nil }.map(\.0)
            guard !admitted.isEmpty else { return CountPlan.merge(refused, []) }
            let read = try await Self.read(
                try await db.run(Self.releaseQuery(admitted, now: now, links: links)), count: admitted.count)
            return CountPlan.merge(refused, Self.outcomes(admitted, read, now: now))
        }
    }

    /// Raises each bucket of `plan` in one statement, in the plan's order;
    /// each bucket's count after it.
    static func raise(_ plan: CountPlan, _ db: PostgresConnection) async throws -> [RateCount: Int] {
        let buckets = plan.raises.map(\.0.bucket)
        let ends = plan.raises.map(\.0.windowEnd)
        let added = plan.raises.map { Int64($0.1) }
        var after: [RateCount: Int] = [:]
        for try await (bucket, end, count) in try await db.run(
            """
            INSERT INTO rate_counts (bucket, window_end, count)
            SELECT b, w, n FROM unnest(\(buckets)::text[], \(ends)::bigint[], \(added)::bigint[]) AS r (b, w, n)
            ON CONFLICT (bucket, window_end) DO UPDATE SET count = rate_counts.count + excluded.count
            RETURNING bucket, window_end, count
            """
        ).decode((String, Int64, Int).self) {
            after[RateCount(bucket: bucket, windowEnd: end)] = count
        }
        return after
    }

    static func outcomes(
        _ requests: [ReleaseRequest], _ read: (snapshots: [KeySnapshot], recorded: Set<Data>, audited: [Bool]),
        now: Int64
    ) -> [Result<StoredVersion?, any Error>] {
        let (snapshots, recorded, audited) = read
        let fresh = KeySnapshot.spend(requests) { recorded.contains($0) }
        let (results, _) = KeySnapshot.outcomes(Array(zip(requests, snapshots)), fresh: fresh, now: now)
        return zip(results, audited).map { result, audited in
            if case .success(_?) = result, !audited {
                return .failure(
                    KeyServerError(.auditFailed, "the database did not audit this release"))
            }
            return result
        }
    }

    static func releaseQuery(_ requests: [ReleaseRequest], now: Int64, links: AuditLinkKey) -> PostgresQuery {
        // Version 0: the latest. A version beyond int4 names no row.
        let versions = requests.map { Int32(exactly: $0.version ?? 0) ?? -1 }
        // No proof: an empty hash (a proof's is 32 bytes), never recorded.
        let proofs = requests.map { ByteBuffer(bytes: $0.proof?.hash ?? Data()) }
        let expiries = requests.map { $0.proof?.expires ?? 0 }
        // Each release's audit encoding up to its version, which the
        // database appends once it has read the version.
        let naming = requests.map { request in
            ByteBuffer(
                bytes: AuditEntry.encodeNaming(
                    at: now, .init(actor: request.actor, action: "release", request.name)))
        }
        // The batch's audit entries are linked under a key of their own.
        let batch = links.batch()
        let (inner, outer) = batch.pads
        let (nonce, innerPad, outerPad) = (
            ByteBuffer(bytes: batch.nonce), ByteBuffer(bytes: inner), ByteBuffer(bytes: outer)
        )
        return """
            SELECT * FROM coffer_release_keyed(\(now), \(requests.map(\.name.realm))::text[],
              \(requests.map(\.name.subject))::text[], \(requests.map(\.name.device))::text[],
              \(requests.map(\.name.purpose))::text[], \(versions)::int4[], \(proofs)::bytea[], \(expiries)::bigint[],
              \(naming)::bytea[], \(requests.map(\.actor))::text[], \(nonce), \(innerPad), \(outerPad))
            """
    }

    @Sendable static func read(_ rows: PostgresRowSequence, count: Int) async throws
        -> (snapshots: [KeySnapshot], recorded: Set<Data>, audited: [Bool])
    {
        var snapshots: [KeySnapshot] = []
        var recorded: Set<Data> = []
        var audited: [Bool] = []
        snapshots.reserveCapacity(count)
        audited.reserveCapacity(count)
        for try await (shredAt, shredded, minimum, version, wrapped, proof, released) in rows.decode(
            (Int64?, Bool?, Int?, Int?, Data?, Data?, Bool).self)
        {
            // More rows than requests is as wrong as fewer.
            guard snapshots.count < count else { throw wrongRowCount }
            if let proof { recorded.insert(proof) }
            snapshots.append(
                KeySnapshot(
                    shredAt: shredAt, shredded: shredded ?? false, minimum: minimum ?? 1,
                    stored: version.flatMap { version in wrapped.map { StoredVersion(version: version, wrapped: $0) } }
                ))
            audited.append(released)
        }
        guard snapshots.count == count else { throw wrongRowCount }
        return (snapshots, recorded, audited)
    }

    static let wrongRowCount = KeyServerError(.databaseError, "the database answered the wrong number of rows")

    /// The release of schema version 5, a PL/pgSQL function (so each
    /// connection plans it once). Per request, in order: the subject's
    /// shred state, the key's minimum version, the version found (0 asks
    /// for the latest), the proof when this statement recorded it, and
    /// whether it released (and audited) that version: its proof is
    /// fresh (recorded now, and its first copy in the batch), its subject
    /// has no shred, the version asked for is not retired, and a version
    /// was found, as ``KeySnapshot/outcomes(_:fresh:now:)`` decides.
    static let releaseFunction = releaseFunction(actors: false)

    /// The release of schema version 11: the same, with each release's
    /// actor given (an operator of scope `keys:release` releases a
    /// subject's key to a service, and the audit names the operator).
    static let releaseFunctionWithActors = releaseFunction(actors: true)

    /// The release of schema version 12: the same, its audit entries
    /// linked under the batch key whose nonce and pads it is handed
    /// (``keyedAuditFunction``).
    static let keyedReleaseFunction = releaseFunction(actors: true, keyed: true)

    static func releaseFunction(actors: Bool, keyed: Bool = false) -> String {
        """
        CREATE FUNCTION coffer_release\(keyed ? "_keyed" : actors ? "_by" : "")(entry_at bigint, realms text[], subjects text[], devices text[],
          purposes text[], versions int4[], proofs bytea[], expiries bigint[], naming bytea[]\(actors ? ", actors text[]" : "")\(keyed ? ", nonce bytea, inner_pad bytea, outer_pad bytea" : ""))
        RETURNS TABLE (key_shred_at bigint, key_shredded boolean, key_minimum integer, key_version integer,
          key_wrapped bytea, proof_recorded bytea, released boolean)
        LANGUAGE plpgsql AS $$
        BEGIN
          RETURN QUERY
          WITH recorded AS (
            INSERT INTO dpop_proofs (hash, expires)
            SELECT p.hash, p.expires FROM unnest(proofs, expiries) AS p (hash, expires) WHERE length(p.hash) > 0
            ON CONFLICT DO NOTHING RETURNING dpop_proofs.hash),
          found AS (
            SELECT r.position, r.realm, r.subject, r.device, r.purpose, r.version AS asked, r.proof, r.naming,\(actors ? " r.actor," : "")
              s.shred_at, s.shredded, f.minimum, k.version, k.wrapped,
              (SELECT recorded.hash FROM recorded WHERE recorded.hash = r.proof) AS spent,
              row_number() OVER (PARTITION BY r.proof ORDER BY r.position) = 1 AS first_copy
            FROM unnest(realms, subjects, devices, purposes, versions, proofs, naming\(actors ? ", actors" : ""))
              WITH ORDINALITY AS r (realm, subject, device, purpose, version, proof, naming, \(actors ? "actor, " : "")position)
            LEFT JOIN subjects s ON s.realm = r.realm AND s.subject = r.subject
            LEFT JOIN key_floors f ON f.realm = r.realm AND f.subject = r.subject AND f.device = r.device
              AND f.purpose = r.purpose
            LEFT JOIN LATERAL (SELECT keys.version, keys.wrapped FROM keys WHERE keys.realm = r.realm
              AND keys.subject = r.subject AND keys.device = r.device AND keys.purpose = r.purpose
              AND (r.version = 0 OR keys.version = r.version)
              ORDER BY keys.version DESC LIMIT 1) k ON true),
          decided AS (
            SELECT found.*, (length(found.proof) = 0 OR (found.spent IS NOT NULL AND found.first_copy))
              AND found.shred_at IS NULL AND (found.asked = 0 OR found.asked >= coalesce(found.minimum, 1))
              AND found.version IS NOT NULL AS releases
            FROM found),
          appended AS (
            SELECT coffer_audit_append\(keyed ? "_keyed" : "")(entry_at,
              array_agg(\(actors ? "d.actor" : "'subject:' || d.subject") ORDER BY d.position) FILTER (WHERE d.releases),
              array_agg('release'::text ORDER BY d.position) FILTER (WHERE d.releases),
              array_agg(d.realm ORDER BY d.position) FILTER (WHERE d.releases),
              array_agg(d.subject ORDER BY d.position) FILTER (WHERE d.releases),
              array_agg(d.device ORDER BY d.position) FILTER (WHERE d.releases),
              array_agg(d.purpose ORDER BY d.position) FILTER (WHERE d.releases),
              array_agg(d.version::bigint ORDER BY d.position) FILTER (WHERE d.releases),
              array_agg(''::text ORDER BY d.position) FILTER (WHERE d.releases),
              array_agg(d.naming || int4send(octet_length(d.version::text)) || convert_to(d.version::text, 'UTF8')
                || int4send(0) ORDER BY d.position) FILTER (WHERE d.releases)\(keyed ? ", nonce, inner_pad, outer_pad" : "")) AS head
            FROM decided d)
          SELECT d.shred_at, d.shredded, d.minimum, d.version, d.wrapped, d.spent, d.releases
          FROM decided d CROSS JOIN appended
          ORDER BY d.position;
        END $$
        """
    }
}
#endif
