#if Server
import Foundation
import PostgresNIO

extension PostgresKeyRows {
    /// One upsert per count, in one transaction: of two replicas counting
    /// the same window at once, one inserts and the other waits on the row
    /// and then raises it, so the counts they see are consecutive. Counts
    /// alone (a released key's are in its release): the transaction
    /// commits with `synchronous_commit = off`, not waiting for its WAL to
    /// be flushed, which the next synced commit does for it. A crash of
    /// the database server can forget the counts of its last moments.
    func countRequests(_ counts: [RateCount]) async throws -> [Int] {
        try await database.transaction { db in
            try await db.run("SET LOCAL synchronous_commit TO off")
            var results: [Int] = []
            for count in counts {
                var value = 1
                for try await counted in try await db.run(
                    """
                    INSERT INTO rate_counts (bucket, window_end, count) VALUES (\(count.bucket), \(count.windowEnd), 1)
                    ON CONFLICT (bucket, window_end) DO UPDATE SET count = rate_counts.count + 1 RETURNING count
                    """
                ).decode(Int.self) {
                    value = counted
                }
                results.append(value)
            }
            return results
        }
    }

    func secret(named name: String, make: Data) async throws -> Data {
        try await database.transaction { db in
            try await db.run(
                "INSERT INTO server_secrets (name, value) VALUES (\(name), \(make)) ON CONFLICT DO NOTHING")
            var value = make
            for try await stored in try await db.run("SELECT value FROM server_secrets WHERE name = \(name)")
                .decode(Data.self)
            {
                value = stored
            }
            return value
        }
    }

    func secrets() async throws -> [String: Data] {
        try await database.query("SELECT name, value FROM server_secrets") { rows in
            var secrets: [String: Data] = [:]
            for try await (name, value) in rows.decode((String, Data).self) { secrets[name] = value }
            return secrets
        }
    }

    func replaceSecret(named name: String, old: Data, sealed: Data, now: Int64, audit: AuditEntry.Record)
        async throws -> Bool
    {
        let links = try await auditLinks.key()
        return try await database.transaction { db in
            var changed = false
            for try await _ in try await db.run(
                "UPDATE server_secrets SET value = \(sealed) WHERE name = \(name) AND value = \(old) RETURNING 1")
            {
                changed = true
            }
            if changed { try await Self.append(db, [audit], now: now, links: links) }
            return changed
        }
    }

    /// Deletes in statements of at most ``KeyRows/forgetBatch`` rows,
    /// each its own short transaction.
    func forgetExpired(before now: Int64) async throws {
        let limit = Self.forgetBatch
        for query: PostgresQuery in [
            """
            DELETE FROM rate_counts WHERE (bucket, window_end) IN
              (SELECT bucket, window_end FROM rate_counts WHERE window_end <= \(now) LIMIT \(limit))
            RETURNING 1
            """,
            """
            DELETE FROM dpop_proofs WHERE hash IN (SELECT hash FROM dpop_proofs WHERE expires <= \(now) LIMIT \(limit))
            RETURNING 1
            """,
        ] {
            while try await database.query(query, { rows in try await rows.reduce(0) { count, _ in count + 1 } })
                == limit
            {}
        }
    }
}
#endif
