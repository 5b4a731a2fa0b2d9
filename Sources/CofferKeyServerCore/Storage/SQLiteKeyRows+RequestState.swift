#if Server
import Foundation
import GRDB

extension SQLiteKeyRows {
    static func registerRateLimitMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v3 request state") { db in
            try db.execute(
                sql: """
                    CREATE TABLE rate_counts (bucket TEXT NOT NULL, window_end INTEGER NOT NULL,
                      count INTEGER NOT NULL, PRIMARY KEY (bucket, window_end)) STRICT, WITHOUT ROWID;
                    CREATE TABLE dpop_proofs (hash BLOB PRIMARY KEY NOT NULL, expires INTEGER NOT NULL)
                      STRICT, WITHOUT ROWID;
                    CREATE TABLE server_secrets (name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL) STRICT;
                    """)
        }
        // Forgetting expired rows reads only those rows, not the tables.
        migrator.registerMigration("v4 expiry indexes") { db in
            try db.execute(
                sql: """
                    CREATE INDEX dpop_proofs_expires ON dpop_proofs (expires);
                    CREATE INDEX rate_counts_window ON rate_counts (window_end);
                    """)
        }
    }

    /// Counts alone (an operator's request, or a key request's its route
    /// refused before releasing; a released key's are in its release).
    /// The transaction commits without its own sync (`synchronous =
    /// NORMAL` for it alone): its WAL frames reach the disk with the next
    /// synced commit. A kill -9 loses no count (the WAL is in the OS's
    /// cache); a power cut can forget counts raised since the last synced
    /// commit (docs/key-server-operating.md, "Rate limits").
    func countRequests(_ counts: [RateCount]) async throws -> [Int] {
        try await pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            var results: [Int] = []
            do {
                try db.inTransaction(.immediate) {
                    let statement = try db.cachedStatement(sql: Self.countSQL)
                    results = try counts.map { count in
                        try Int.fetchOne(statement, arguments: [count.bucket, count.windowEnd, 1]) ?? 1
                    }
                    return .commit
                }
            } catch {
                try db.execute(sql: "PRAGMA synchronous = FULL")
                throw error
            }
            try db.execute(sql: "PRAGMA synchronous = FULL")
            return results
        }
    }

    func secret(named name: String, make: Data) async throws -> Data {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO server_secrets (name, value) VALUES (?, ?) ON CONFLICT DO NOTHING",
                arguments: [name, make])
            return try Data.fetchOne(db, sql: "SELECT value FROM server_secrets WHERE name = ?", arguments: [name])
                ?? make
        }
    }

    func secrets() async throws -> [String: Data] {
        try await pool.read { db in
            var secrets: [String: Data] = [:]
            let rows = try Row.fetchCursor(db, sql: "SELECT name, value FROM server_secrets")
            while let row = try rows.next() {
                secrets[try row.decode(forColumn: "name")] = try row.decode(forColumn: "value")
            }
            return secrets
        }
    }

    func replaceSecret(named name: String, old: Data, sealed: Data, now: Int64, audit: AuditEntry.Record)
        async throws -> Bool
    {
        let links = try await auditLinks.key()
        return try await pool.write { db in
            try db.execute(
                sql: "UPDATE server_secrets SET value = ? WHERE name = ? AND value = ?", arguments: [sealed, name, old])
            guard db.changesCount == 1 else { return false }
            try Self.append(db, [audit], now: now, links: links)
            return true
        }
    }

    /// Deletes in transactions of at most ``forgetBatch`` rows, so that
    /// the releases waiting on the writer wait for one short transaction,
    /// never for a sweep of a minute's worth of proofs.
    func forgetExpired(before now: Int64) async throws {
        let sql = """
            DELETE FROM rate_counts WHERE (bucket, window_end) IN
              (SELECT bucket, window_end FROM rate_counts WHERE window_end <= ? LIMIT ?)
            """
        while try await pool.write({ db in
            try db.execute(sql: sql, arguments: [now, Self.forgetBatch])
            return db.changesCount
        }) == Self.forgetBatch {}
        try await forgetSpentProofs(before: now)
    }

}
#endif
