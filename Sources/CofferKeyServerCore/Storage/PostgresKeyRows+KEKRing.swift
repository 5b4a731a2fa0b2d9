#if Server
import Foundation
import PostgresNIO

// The KEK ring kept in the database (one row), on PostgreSQL.
extension PostgresKeyRows {
    func kekRing() async throws -> Data? {
        try await database.query("SELECT ring FROM kek_ring WHERE id = 1") { rows in
            var ring: Data?
            for try await value in rows.decode(Data.self) { ring = value }
            return ring
        }
    }

    func replaceKEKRing(_ ring: Data, replacing old: Data?) async throws -> Bool {
        try await database.transaction { db in
            var changed = 0
            let query: PostgresQuery
            if let old {
                query = try "UPDATE kek_ring SET ring = \(ring) WHERE id = 1 AND ring = \(old) RETURNING id"
            } else {
                query = try "INSERT INTO kek_ring (id, ring) VALUES (1, \(ring)) ON CONFLICT DO NOTHING RETURNING id"
            }
            for try await _ in try await db.run(query).decode(Int.self) { changed += 1 }
            return changed == 1
        }
    }
}
#endif
