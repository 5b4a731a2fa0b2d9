#if Server
import Coffer
import Foundation
import GRDB

extension ServerKeyStore {
    /// A consistent copy of an SQLite database at `path` (SQLite's online
    /// backup: the server may keep writing), closed to others (mode 600).
    /// A PostgreSQL store has no such copy here: `pg_dump` makes it.
    package func backupSQLite(to path: String) async throws {
        guard let rows = rows as? SQLiteKeyRows else {
            throw CofferError(.unsupported, "the database is PostgreSQL: pg_dump copies it")
        }
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        else { throw CofferError(.io, "cannot write \(path)") }
        let destination = try DatabaseQueue(path: path)
        try await BlockingWork.run { try rows.pool.backup(to: destination) }
        try destination.close()
    }

    /// The KEK ring's bytes as the database keeps them (nil when it keeps
    /// none), unchecked: the caller opens them under the root.
    package func storedKEKRing() async throws -> Data? { try await rows.kekRing() }
}
#endif
