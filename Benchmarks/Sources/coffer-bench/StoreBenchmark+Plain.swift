#if canImport(Glibc)
import Coffer
import CofferStore
import Foundation
import GRDB

/// The plain GRDB side of the store benchmark: the anchor's table and
/// inserts, SQLite's floor for the store's rows, and the order rows arrive in.
extension StoreBenchmark {
    /// What SQLite alone does with rows of the store's shape, on one thread
    /// as plain GRDB does: each row's clear city, random bytes of the size
    /// of its sealed note and email, and a random 6-byte value in an
    /// indexed column (a blind index value is random by design, so each
    /// insert lands on a random page of its index). Same batches, same
    /// page cache as the store's writer.
    static func shapedFloor(rows: Int, path: String) throws -> (wall: Double, cpu: Double) {
        let pool = try DatabasePool(path: path)
        try pool.write { db in
            try db.execute(
                sql: """
                    PRAGMA cache_size = -32768;
                    CREATE TABLE people (id INTEGER PRIMARY KEY NOT NULL, city TEXT, note BLOB, email BLOB, email_exact BLOB) STRICT;
                    CREATE INDEX people_email_exact ON people (email_exact)
                    """)
        }
        // xorshift64: stands in for ciphertext, at a fraction of its cost.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func random(_ count: Int) -> Data {
            var bytes = [UInt8](repeating: 0, count: count)
            for index in bytes.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                bytes[index] = UInt8(truncatingIfNeeded: state)
            }
            return Data(bytes)
        }
        let overhead = try sealedOverhead
        defer { remove(pool, at: path) }
        return try insert(
            rows: rows, into: pool, "INSERT INTO people (city, note, email, email_exact) VALUES (?, ?, ?, ?)"
        ) {
            let record = Self.record($0)
            return [
                record["city"]!.text, random(record["note"]!.text!.utf8.count + overhead),
                random(record["email"]!.text!.utf8.count + overhead), random(6),
            ]
        }
    }

    /// Closes `pool` and removes its database at `path`, with its WAL and
    /// shared-memory files, so that the next run starts from free space.
    static func remove(_ pool: DatabasePool, at path: String) {
        try? pool.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// The plain table: the same columns in the clear, an SQL index on email.
    static func plainTable(path: String) throws -> DatabasePool {
        let pool = try DatabasePool(path: path)
        try pool.write { db in
            try db.execute(
                sql:
                    "CREATE TABLE people (id INTEGER PRIMARY KEY NOT NULL, city TEXT, note TEXT, email TEXT) STRICT; CREATE INDEX people_email ON people (email)"
            )
        }
        return pool
    }

    /// Plain GRDB's inserts of `rows` records into the plain table, the
    /// `index`th insert carrying record `order(index)`.
    static func insert(rows: Int, into pool: DatabasePool, order: (Int) -> Int) throws -> (wall: Double, cpu: Double) {
        try insert(rows: rows, into: pool, "INSERT INTO people (city, note, email) VALUES (?, ?, ?)") {
            let record = Self.record(order($0))
            return [record["city"]!.text, record["note"]!.text, record["email"]!.text]
        }
    }

    /// Plain GRDB's inserts of `rows` records: one prepared statement, one
    /// transaction per batch, the `index`th row's arguments from `arguments`.
    static func insert(
        rows: Int, into pool: DatabasePool, _ sql: String, _ arguments: (Int) -> StatementArguments
    ) throws -> (wall: Double, cpu: Double) {
        try measure {
            for start in stride(from: 0, to: rows, by: batch) {
                try pool.write { db in
                    let statement = try db.makeStatement(sql: sql)
                    for index in start..<min(rows, start + batch) {
                        try statement.execute(arguments: arguments(index))
                    }
                }
            }
        }
    }

    /// The order records arrive in: a fixed permutation of `0..<rows`
    /// (multiplication by a prime that does not divide `rows`), so that
    /// consecutive inserts carry emails far apart in sort order, as real
    /// sign-ups do. Every email stays present exactly once.
    static func arrival(rows: Int) -> @Sendable (Int) -> Int {
        let prime = rows % 999_983 == 0 ? 1_000_003 : 999_983
        return { index in (index * prime + 12_345) % rows }
    }
}
#endif
