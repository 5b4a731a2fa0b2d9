#if Server
// Operators in SQLite: each token kept as its SHA-256, with its name,
// scopes and realm.
import CofferStore
import Foundation
import GRDB

extension SQLiteKeyRows {
    func addOperator(
        hash: Data, name: String, scopes: String, realm: String, created: Int64, expires: Int64?,
        audit: AuditEntry.Record
    ) async throws {
        let links = try await auditLinks.key()
        return try await pool.write { db in
            guard try Int.fetchOne(db, sql: "SELECT count(*) FROM operators WHERE name = ?", arguments: [name]) == 0
            else { throw KeyServerError(.operatorExists, "an operator named \(name) exists already") }
            try db.execute(
                sql: "INSERT INTO operators (hash, name, scopes, realm, created, expires) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [hash, name, scopes, realm, created, expires])
            try Self.append(db, [audit], now: created, links: links)
        }
    }

    func operatorInfo(hash: Data) async throws -> OperatorInfo? {
        try await pool.read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: "SELECT name, scopes, realm, created, expires FROM operators WHERE hash = ?"),
                arguments: [hash]
            ).map(Self.info)
        }
    }

    func operators() async throws -> [OperatorInfo] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT name, scopes, realm, created, expires FROM operators ORDER BY name").map(
                Self.info)
        }
    }

    func removeOperator(name: String, now: Int64, audit: AuditEntry.Record) async throws -> Bool {
        let links = try await auditLinks.key()
        return try await pool.write { db in
            try db.execute(sql: "DELETE FROM operators WHERE name = ?", arguments: [name])
            guard db.changesCount > 0 else { return false }
            try Self.append(db, [audit], now: now, links: links)
            return true
        }
    }

    static func info(_ row: Row) throws -> OperatorInfo {
        try OperatorInfo(
            name: row.decode(String.self, forColumn: "name"), scopes: row.decode(String.self, forColumn: "scopes"),
            realm: row.decode(String?.self, forColumn: "realm"), created: row.decode(Int64.self, forColumn: "created"),
            expires: row.decode(Int64?.self, forColumn: "expires"))
    }

    /// Operators made before this have none (NULL) and are refused until
    /// made again for a realm (``ServerKeyStore/addOperator(name:scopes:realm:by:)``).
    static func registerOperatorRealmMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v7 operator realms") { db in
            try db.execute(sql: "ALTER TABLE operators ADD COLUMN realm TEXT")
        }
    }

    /// Operators made before this never expire (NULL).
    static func registerOperatorExpiryMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v10 operator expiry") { db in
            try db.execute(sql: "ALTER TABLE operators ADD COLUMN expires INTEGER")
        }
    }
}
#endif
