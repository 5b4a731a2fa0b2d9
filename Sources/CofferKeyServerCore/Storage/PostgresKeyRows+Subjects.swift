#if Server
import Foundation
import PostgresNIO

// An operator's reads of subjects on PostgreSQL.
extension PostgresKeyRows {
    func subjectKeys(realm: String, subject: String) async throws -> SubjectKeys {
        let keys = try await database.query(
            """
            SELECT k.purpose, k.device, MAX(k.version), COUNT(*)::integer, f.minimum FROM keys k
            LEFT JOIN key_floors f ON f.realm = k.realm AND f.subject = k.subject AND f.device = k.device
              AND f.purpose = k.purpose
            WHERE k.realm = \(realm) AND k.subject = \(subject) GROUP BY k.purpose, k.device, f.minimum
            ORDER BY k.purpose, k.device
            """
        ) { rows in
            var keys: [SubjectKeys.Key] = []
            for try await (purpose, device, current, versions, minimum) in rows.decode(
                (String, String, Int32, Int32, Int32?).self)
            {
                keys.append(
                    SubjectKeys.Key(
                        purpose: purpose, device: device, current: Int(current), minimum: Int(minimum ?? 1),
                        versions: Int(versions)))
            }
            return keys
        }
        let shred = try await database.query(
            "SELECT shred_at, shredded FROM subjects WHERE realm = \(realm) AND subject = \(subject)"
        ) { rows in
            var shred: (Int64, Bool)?
            for try await row in rows.decode((Int64, Bool).self) { shred = row }
            return shred
        }
        return SubjectKeys(subject: subject, keys: keys, shredAt: shred?.0, shredded: shred?.1 ?? false)
    }

    func subjects(realm: String, after: String, limit: Int) async throws -> [String] {
        try await database.query(
            """
            SELECT subject FROM keys WHERE realm = \(realm) AND subject > \(after)
            UNION SELECT subject FROM subjects WHERE realm = \(realm) AND subject > \(after)
            ORDER BY subject LIMIT \(limit)
            """
        ) { rows in
            var subjects: [String] = []
            for try await subject in rows.decode(String.self) { subjects.append(subject) }
            return subjects
        }
    }
}
#endif
