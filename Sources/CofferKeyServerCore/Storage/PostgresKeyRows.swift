#if Server
import Foundation
import PostgresNIO

/// The rows in a PostgreSQL database, shared by any number of
/// `coffer-server` replicas: every piece of state lives in the database,
/// none only in one replica's memory. Transactions run at READ COMMITTED;
/// where two replicas may race (a first use, a rotation, a shred), the
/// statements are written so that the loser waits and then agrees, or
/// fails on a unique key and runs again (``PostgresDatabase/transaction(_:)``).
final class PostgresKeyRows: KeyRows {
    let auditLinks = AuditLinks()
    let database: PostgresDatabase

    init(_ database: PostgresDatabase) { self.database = database }

    // MARK: keys

    func create(_ name: KeyName, wrapped: Data, now: Int64, actor: String) async throws -> StoredVersion {
        let links = try await auditLinks.key()
        return try await database.transaction { db in
            try await Self.gate(db, name, now: now)
            var made = false
            for try await _ in try await db.run(
                """
                INSERT INTO keys (realm, subject, device, purpose, version, wrapped, created)
                VALUES (\(name.realm), \(name.subject), \(name.device), \(name.purpose), 1, \(wrapped), \(now))
                ON CONFLICT DO NOTHING RETURNING 1
                """
            ) { made = true }
            let stored = try await Self.latest(db, name)!
            try await Self.append(
                db, AuditEntry.Record.firstUse(name, actor: actor, made: made, version: stored.version), now: now,
                links: links)
            return stored
        }
    }

    func rotate(
        _ name: KeyName, now: Int64, audit: AuditEntry.Record, seal: @escaping @Sendable (Int) throws -> Data
    ) async throws -> StoredVersion {
        let links = try await auditLinks.key()
        return try await database.transaction { db in
            try await Self.gate(db, name, now: now)
            let next = (try await Self.latest(db, name)?.version ?? 0) + 1
            let wrapped = try seal(next)
            // A replica rotating at once takes the same version: the loser
            // fails on the primary key and runs again.
            try await db.run(
                """
                INSERT INTO keys (realm, subject, device, purpose, version, wrapped, created)
                VALUES (\(name.realm), \(name.subject), \(name.device), \(name.purpose), \(next), \(wrapped), \(now))
                """)
            var audit = audit
            audit.version = Int64(next)
            try await Self.append(db, [audit], now: now, links: links)
            return try await Self.latest(db, name)!
        }
    }

    func retire(_ name: KeyName, minimum: Int, now: Int64, audit: AuditEntry.Record) async throws {
        let links = try await auditLinks.key()
        return try await database.transaction { db in
            try await Self.gate(db, name, now: now)
            var floor = 1
            for try await value in try await db.run(
                """
                SELECT minimum FROM key_floors WHERE realm = \(name.realm) AND subject = \(name.subject)
                  AND device = \(name.device) AND purpose = \(name.purpose) FOR UPDATE
                """
            ).decode(Int.self) { floor = value }
            try RetireRule.check(minimum: minimum, current: try await Self.latest(db, name)?.version, floor: floor)
            // GREATEST: a retirement racing this one never lowers the floor.
            try await db.run(
                """
                INSERT INTO key_floors (realm, subject, device, purpose, minimum)
                VALUES (\(name.realm), \(name.subject), \(name.device), \(name.purpose), \(minimum))
                ON CONFLICT (realm, subject, device, purpose)
                DO UPDATE SET minimum = GREATEST(key_floors.minimum, excluded.minimum)
                """)
            try await Self.append(db, [audit], now: now, links: links)
        }
    }

    static func latest(_ db: PostgresConnection, _ name: KeyName) async throws -> StoredVersion? {
        let rows = try await db.run(
            """
            SELECT version, wrapped FROM keys WHERE realm = \(name.realm) AND subject = \(name.subject)
              AND device = \(name.device) AND purpose = \(name.purpose) ORDER BY version DESC LIMIT 1
            """)
        var stored: StoredVersion?
        for try await (version, wrapped) in rows.decode((Int, Data).self) {
            stored = StoredVersion(version: version, wrapped: wrapped)
        }
        return stored
    }

    // MARK: shredding

    static func subjectState(_ db: PostgresConnection, realm: String, subject: String, lock: Bool) async throws
        -> (shredAt: Int64, shredded: Bool)?
    {
        let query: PostgresQuery =
            lock
            ? "SELECT shred_at, shredded FROM subjects WHERE realm = \(realm) AND subject = \(subject) FOR UPDATE"
            : "SELECT shred_at, shredded FROM subjects WHERE realm = \(realm) AND subject = \(subject)"
        var state: (Int64, Bool)?
        for try await row in try await db.run(query).decode((Int64, Bool).self) { state = row }
        return state.map { (shredAt: $0.0, shredded: $0.1) }
    }

    static func gate(_ db: PostgresConnection, _ name: KeyName, now: Int64) async throws {
        guard let state = try await subjectState(db, realm: name.realm, subject: name.subject, lock: false) else {
            return
        }
        try ShredRule.refuse(shredAt: state.shredAt, shredded: state.shredded, now: now)
    }

    func shred(realm: String, subject: String, at: Int64, now: Int64, audit: AuditEntry.Record) async throws -> Int64 {
        let links = try await auditLinks.key()
        return try await database.transaction { db in
            let existing = try await Self.subjectState(db, realm: realm, subject: subject, lock: true)
            let when = try ShredRule.scheduled(at: at, existing: existing)
            var stored = when
            for try await value in try await db.run(
                """
                INSERT INTO subjects (realm, subject, shred_at) VALUES (\(realm), \(subject), \(when))
                ON CONFLICT (realm, subject) DO UPDATE SET shred_at = LEAST(subjects.shred_at, excluded.shred_at)
                RETURNING shred_at
                """
            ).decode(Int64.self) { stored = value }
            var audit = audit
            audit.detail = "at \(ShredRule.timestamp(stored))"
            try await Self.append(db, [audit], now: now, links: links)
            return stored
        }
    }

    func undoShred(realm: String, subject: String, now: Int64, audit: AuditEntry.Record) async throws {
        let links = try await auditLinks.key()
        return try await database.transaction { db in
            try ShredRule.undo(
                existing: try await Self.subjectState(db, realm: realm, subject: subject, lock: true), now: now)
            try await db.run("DELETE FROM subjects WHERE realm = \(realm) AND subject = \(subject)")
            try await Self.append(db, [audit], now: now, links: links)
        }
    }

    /// Also deletes any key of a subject shredded earlier (one made by a
    /// request that passed its check just before the shred committed).
    func sweep(now: Int64) async throws -> Int {
        let links = try await auditLinks.key()
        return try await database.transaction { db in
            var due: [AuditEntry.Record] = []
            for try await (realm, subject) in try await db.run(
                "UPDATE subjects SET shredded = true WHERE NOT shredded AND shred_at <= \(now) RETURNING realm, subject"
            ).decode((String, String).self) { due.append(.sweep(realm: realm, subject: subject)) }
            try await Self.append(db, due, now: now, links: links)
            try await db.run(
                "DELETE FROM keys k USING subjects s WHERE s.shredded AND s.realm = k.realm AND s.subject = k.subject")
            try await db.run(
                "DELETE FROM key_floors f USING subjects s WHERE s.shredded AND s.realm = f.realm AND s.subject = f.subject"
            )
            return due.count
        }
    }
}
#endif
