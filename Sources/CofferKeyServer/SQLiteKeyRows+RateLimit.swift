import GRDB

extension SQLiteKeyRows {
    static func registerRateLimitMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v3 rate limits") { db in
            try db.execute(
                sql: """
                    CREATE TABLE rate_counts (bucket TEXT NOT NULL, window_end INTEGER NOT NULL,
                      count INTEGER NOT NULL, PRIMARY KEY (bucket, window_end)) STRICT, WITHOUT ROWID;
                    """)
        }
    }

    func countRequest(bucket: String, windowEnd: Int64) async throws -> Int {
        try await pool.write { db in
            try Int.fetchOne(
                db,
                sql: """
                    INSERT INTO rate_counts (bucket, window_end, count) VALUES (?, ?, 1)
                    ON CONFLICT (bucket, window_end) DO UPDATE SET count = count + 1 RETURNING count
                    """,
                arguments: [bucket, windowEnd]) ?? 1
        }
    }

    func forgetCounts(before now: Int64) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM rate_counts WHERE window_end <= ?", arguments: [now])
        }
    }
}
