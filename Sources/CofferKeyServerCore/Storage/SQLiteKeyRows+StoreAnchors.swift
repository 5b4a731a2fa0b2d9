#if Server
import Foundation
import GRDB

// CofferStores' anchored states on SQLite.
extension SQLiteKeyRows {
    static func registerStoreAnchorMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v9 store anchors") { db in
            try db.execute(
                sql: """
                    CREATE TABLE store_anchors (realm TEXT NOT NULL, store TEXT NOT NULL, state BLOB NOT NULL,
                      updated INTEGER NOT NULL, PRIMARY KEY (realm, store)) STRICT;
                    """)
        }
    }

    func storeAnchor(realm: String, store: String) async throws -> Data? {
        try await pool.read { db in
            try Data.fetchOne(
                db, sql: "SELECT state FROM store_anchors WHERE realm = ? AND store = ?", arguments: [realm, store])
        }
    }

    func updateStoreAnchor(
        realm: String, store: String, now: Int64, audit: AuditEntry.Record,
        _ decide: @escaping @Sendable (Data?) throws -> Data?
    ) async throws -> Data {
        let links = try await auditLinks.key()
        return try await pool.write { db in
            let stored = try Data.fetchOne(
                db, sql: "SELECT state FROM store_anchors WHERE realm = ? AND store = ?", arguments: [realm, store])
            guard let state = try decide(stored) else { return stored! }
            try db.execute(
                sql: """
                    INSERT INTO store_anchors (realm, store, state, updated) VALUES (?, ?, ?, ?)
                    ON CONFLICT (realm, store) DO UPDATE SET state = excluded.state, updated = excluded.updated
                    """, arguments: [realm, store, state, now])
            try Self.append(db, [audit], now: now, links: links)
            return state
        }
    }
}
#endif
