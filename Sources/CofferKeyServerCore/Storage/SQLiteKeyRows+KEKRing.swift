#if Server
import Foundation
import GRDB

// The KEK ring kept in the database (one row), on SQLite.
extension SQLiteKeyRows {
    static func registerKEKRingMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v11 kek ring") { db in
            try db.execute(
                sql: "CREATE TABLE kek_ring (id INTEGER PRIMARY KEY CHECK (id = 1), ring BLOB NOT NULL) STRICT")
        }
    }

    func kekRing() async throws -> Data? {
        try await pool.read { db in try Data.fetchOne(db, sql: "SELECT ring FROM kek_ring WHERE id = 1") }
    }

    func replaceKEKRing(_ ring: Data, replacing old: Data?) async throws -> Bool {
        try await pool.write { db in
            if let old {
                try db.execute(sql: "UPDATE kek_ring SET ring = ? WHERE id = 1 AND ring = ?", arguments: [ring, old])
            } else {
                try db.execute(
                    sql: "INSERT INTO kek_ring (id, ring) VALUES (1, ?) ON CONFLICT DO NOTHING", arguments: [ring])
            }
            return db.changesCount == 1
        }
    }
}
#endif
