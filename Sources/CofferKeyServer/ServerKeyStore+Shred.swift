import Foundation
import GRDB
import HTTPTypes

/// Crypto-shredding one subject: `shred` schedules the destruction of
/// every key of the subject after an undo window; from then on, and for
/// ever, its keys answer `410 key-shredded`. During the window they answer
/// `409 shred-pending` and an operator may `undoShred`. `sweep` deletes the
/// rows of subjects whose time has come (the server runs it every 30
/// seconds, and before each shred); SQLite's `secure_delete` overwrites them.
extension ServerKeyStore {
    /// What a subject's shred state forbids, thrown.
    static func gate(_ db: Database, _ name: KeyName, now: Int64) throws {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT shred_at, shredded FROM subjects WHERE realm = ? AND subject = ?"),
                arguments: [name.realm, name.subject])
        else { return }
        try refuse(shredAt: row["shred_at"], shredded: row["shredded"] as Int64 != 0, now: now)
    }

    /// What a subject with a shred scheduled at `at` answers.
    static func refuse(shredAt at: Int64, shredded: Bool, now: Int64) throws {
        if shredded || at <= now {
            throw Problem(.gone, "key-shredded", "this subject's keys were destroyed")
        }
        throw Problem(
            .conflict, "shred-pending",
            "this subject's keys are to be destroyed at \(Self.timestamp(at)); until then an operator can undo it")
    }

    static func timestamp(_ seconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// Schedules the destruction of every key of `subject` in `realm`,
    /// `window` seconds from now (0: at once); returns when. Shredding a
    /// subject with a shred pending moves it no later than it was.
    @discardableResult
    public func shred(realm: String, subject: String, after window: Int64) async throws -> Int64 {
        guard window >= 0, window <= 366 * 86400 else {
            throw Problem.badRequest("invalid-undo-window", "the undo window is 0 to 31,622,400 seconds (366 days)")
        }
        let at = now() + window
        let when = try await pool.write { db -> Int64 in
            if let row = try Row.fetchOne(
                db, sql: "SELECT shred_at, shredded FROM subjects WHERE realm = ? AND subject = ?",
                arguments: [realm, subject])
            {
                if row["shredded"] as Int64 != 0 {
                    throw Problem(.gone, "key-shredded", "this subject's keys were destroyed")
                }
                let earlier = min(row["shred_at"] as Int64, at)
                try db.execute(
                    sql: "UPDATE subjects SET shred_at = ? WHERE realm = ? AND subject = ?",
                    arguments: [earlier, realm, subject])
                return earlier
            }
            try db.execute(
                sql: "INSERT INTO subjects (realm, subject, shred_at) VALUES (?, ?, ?)",
                arguments: [realm, subject, at])
            return at
        }
        try await sweep()
        return when
    }

    /// Cancels a pending shred; `key-shredded` once it happened,
    /// `shred-not-pending` when none was asked for.
    public func undoShred(realm: String, subject: String) async throws {
        let now = self.now()
        try await pool.write { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT shred_at, shredded FROM subjects WHERE realm = ? AND subject = ?",
                    arguments: [realm, subject])
            else { throw Problem(.notFound, "shred-not-pending", "no shred of this subject is pending") }
            guard row["shredded"] as Int64 == 0, row["shred_at"] as Int64 > now else {
                throw Problem(.gone, "key-shredded", "this subject's keys were destroyed; a shred cannot be undone")
            }
            try db.execute(sql: "DELETE FROM subjects WHERE realm = ? AND subject = ?", arguments: [realm, subject])
        }
    }

    /// Destroys the keys of every subject whose shred is due; returns how
    /// many subjects it shredded.
    @discardableResult
    public func sweep() async throws -> Int {
        let now = self.now()
        return try await pool.write { db in
            let due = try Row.fetchAll(
                db, sql: "SELECT realm, subject FROM subjects WHERE shredded = 0 AND shred_at <= ?", arguments: [now])
            for row in due {
                let arguments: StatementArguments = [row["realm"] as String, row["subject"] as String]
                try db.execute(sql: "DELETE FROM keys WHERE realm = ? AND subject = ?", arguments: arguments)
                try db.execute(sql: "DELETE FROM key_floors WHERE realm = ? AND subject = ?", arguments: arguments)
                try db.execute(
                    sql: "UPDATE subjects SET shredded = 1 WHERE realm = ? AND subject = ?", arguments: arguments)
            }
            return due.count
        }
    }
}
