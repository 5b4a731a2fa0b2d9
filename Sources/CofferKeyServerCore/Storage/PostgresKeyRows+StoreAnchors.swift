#if Server
import Foundation
import PostgresNIO

// CofferStores' anchored states on PostgreSQL.
extension PostgresKeyRows {
    func storeAnchor(realm: String, store: String) async throws -> Data? {
        try await database.query("SELECT state FROM store_anchors WHERE realm = \(realm) AND store = \(store)") {
            rows in
            var state: Data?
            for try await value in rows.decode(Data.self) { state = value }
            return state
        }
    }

    func updateStoreAnchor(
        realm: String, store: String, now: Int64, audit: AuditEntry.Record,
        _ decide: @escaping @Sendable (Data?) throws -> Data?
    ) async throws -> Data {
        let links = try await auditLinks.key()
        return try await database.transaction { db in
            // One writer per store at a time, a first anchor included (no row to lock yet).
            let lock = "coffer store anchor \(realm) \(store)"
            try await db.run("SELECT pg_advisory_xact_lock(hashtext(\(lock)))")
            var stored: Data?
            for try await value in try await db.run(
                "SELECT state FROM store_anchors WHERE realm = \(realm) AND store = \(store)"
            ).decode(Data.self) { stored = value }
            guard let state = try decide(stored) else { return stored! }
            try await db.run(
                """
                INSERT INTO store_anchors (realm, store, state, updated) VALUES (\(realm), \(store), \(state), \(now))
                ON CONFLICT (realm, store) DO UPDATE SET state = excluded.state, updated = excluded.updated
                """)
            try await Self.append(db, [audit], now: now, links: links)
            return state
        }
    }
}
#endif
