#if Server
import Foundation
import GRDB

// An operator's reads of subjects on SQLite.
extension SQLiteKeyRows {
    func subjectKeys(realm: String, subject: String) async throws -> SubjectKeys {
        try await pool.read { db in
            let keys = try Row.fetchAll(
                db,
                sql: """
                    SELECT k.purpose, k.device, MAX(k.version), COUNT(*), f.minimum FROM keys k
                    LEFT JOIN key_floors f ON f.realm = k.realm AND f.subject = k.subject AND f.device = k.device
                      AND f.purpose = k.purpose
                    WHERE k.realm = ? AND k.subject = ? GROUP BY k.purpose, k.device ORDER BY k.purpose, k.device
                    """, arguments: [realm, subject]
            ).map { row in
                guard let purpose = try Self.value(row[0], "purpose", as: String.self),
                    let device = try Self.value(row[1], "device", as: String.self),
                    let current = try Self.value(row[2], "version", as: Int.self),
                    let versions = try Self.value(row[3], "count", as: Int.self)
                else { throw Self.malformed("key row") }
                let minimum = try Self.value(row[4], "minimum", as: Int.self) ?? 1
                return SubjectKeys.Key(
                    purpose: purpose, device: device, current: current, minimum: minimum, versions: versions)
            }
            let shred = try Row.fetchOne(
                db, sql: "SELECT shred_at, shredded FROM subjects WHERE realm = ? AND subject = ?",
                arguments: [realm, subject])
            let shredAt = try shred.map { row in
                guard let at = try Self.value(row[0], "shred_at", as: Int64.self) else {
                    throw Self.malformed("shred row")
                }
                return at
            }
            let shredded = try shred.flatMap { try Self.value($0[1], "shredded", as: Bool.self) } ?? false
            return SubjectKeys(subject: subject, keys: keys, shredAt: shredAt, shredded: shredded)
        }
    }

    func subjects(realm: String, after: String, limit: Int) async throws -> [String] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT subject FROM keys WHERE realm = ?1 AND subject > ?2
                    UNION SELECT subject FROM subjects WHERE realm = ?1 AND subject > ?2
                    ORDER BY subject LIMIT ?3
                    """, arguments: [realm, after, limit]
            ).map { row in
                guard let subject = try Self.value(row[0], "subject", as: String.self) else {
                    throw Self.malformed("subject")
                }
                return subject
            }
        }
    }
}
#endif
