import Foundation
import PostgresNIO

// The audit chain on PostgreSQL: appends from every replica take one
// advisory lock in turn, and read the chain's head only once they hold
// it (READ COMMITTED: that statement sees every append committed before),
// so the chain never forks.
extension PostgresKeyRows {
    static let auditLock: Int64 = 7_365_487_310_561_385

    static func append(_ db: PostgresConnection, _ records: [AuditEntry.Record], now: Int64) async throws {
        guard !records.isEmpty else { return }
        try await db.run("SELECT pg_advisory_xact_lock(\(auditLock))")
        var (seq, previous) = (Int64(0), AuditEntry.genesis)
        for try await (last, hash) in try await db.run("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")
            .decode((Int64, Data).self)
        {
            (seq, previous) = (last, hash)
        }
        var entries: [AuditEntry] = []
        entries.reserveCapacity(records.count)
        for record in records {
            seq += 1
            let entry = AuditEntry(seq: seq, at: now, record: record, previous: previous)
            entries.append(entry)
            previous = entry.hash
        }
        // The whole batch in one statement (one round trip, one plan),
        // column by column.
        try await db.run(
            """
            INSERT INTO audit (seq, at, actor, action, realm, subject, device, purpose, version, detail, hash)
            SELECT * FROM unnest(\(entries.map(\.seq))::bigint[], \(entries.map(\.at))::bigint[],
              \(entries.map(\.actor))::text[], \(entries.map(\.action))::text[], \(entries.map(\.realm))::text[],
              \(entries.map(\.subject))::text[], \(entries.map(\.device))::text[], \(entries.map(\.purpose))::text[],
              \(entries.map(\.version))::bigint[], \(entries.map(\.detail))::text[],
              \(entries.map { ByteBuffer(bytes: $0.hash) })::bytea[])
            """)
    }

    func auditEntries(after seq: Int64, limit: Int) async throws -> [AuditEntry] {
        try await database.query(
            "SELECT \(unescaped: Self.auditColumns) FROM audit WHERE seq > \(seq) ORDER BY seq LIMIT \(limit)",
            Self.entries)
    }

    func auditEntries(realm: String, subject: String) async throws -> [AuditEntry] {
        try await database.query(
            "SELECT \(unescaped: Self.auditColumns) FROM audit WHERE realm = \(realm) AND subject = \(subject) ORDER BY seq",
            Self.entries)
    }

    static let auditColumns = "seq, at, actor, action, realm, subject, device, purpose, version, detail, hash"

    @Sendable static func entries(_ rows: PostgresRowSequence) async throws -> [AuditEntry] {
        var entries: [AuditEntry] = []
        for try await (seq, at, actor, action, realm, subject, device, purpose, version, detail, hash) in rows.decode(
            (Int64, Int64, String, String, String, String, String, String, Int64, String, Data).self)
        {
            entries.append(
                AuditEntry(
                    seq: seq, at: at, actor: actor, action: action, realm: realm, subject: subject, device: device,
                    purpose: purpose, version: version, detail: detail, hash: hash))
        }
        return entries
    }
}
