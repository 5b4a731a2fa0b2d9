#if Server
import Foundation

/// Crypto-shredding one subject: `shred` schedules the destruction of
/// every key of the subject after an undo window; from then on, and for
/// ever, its keys answer `410 key-shredded`. During the window they answer
/// `409 shred-pending` and an operator may `undoShred`. `sweep` deletes the
/// rows of subjects whose time has come (the server runs it every 30
/// seconds, and before each shred); SQLite's `secure_delete` overwrites them.
extension ServerKeyStore {
    package static func timestamp(_ seconds: Int64) -> String { ShredRule.timestamp(seconds) }

    /// Schedules the destruction of every key of `subject` in `realm`,
    /// `window` seconds from now (0: at once); returns when. Shredding a
    /// subject with a shred pending moves it no later than it was.
    @discardableResult
    public func shred(realm: String, subject: String, after window: Int64, by actor: String = "server") async throws
        -> Int64
    {
        guard window >= 0, window <= 366 * 86400 else {
            throw KeyServerError(.invalidUndoWindow, "the undo window is 0 to 31,622,400 seconds (366 days)")
        }
        let now = self.now()
        let when = try await rows.shred(
            realm: realm, subject: subject, at: now + window, now: now,
            audit: .subject(actor: actor, action: "shred", realm: realm, subject: subject))
        try await sweep()
        return when
    }

    /// Cancels a pending shred; `key-shredded` once it happened,
    /// `shred-not-pending` when none was asked for.
    public func undoShred(realm: String, subject: String, by actor: String = "server") async throws {
        try await rows.undoShred(
            realm: realm, subject: subject, now: now(),
            audit: .subject(actor: actor, action: "undo-shred", realm: realm, subject: subject))
    }

    /// Destroys the keys of every subject whose shred is due, and forgets
    /// the rate-limit counts of past windows and the DPoP proofs too old to
    /// be accepted again; returns how many subjects it shredded.
    @discardableResult
    public func sweep() async throws -> Int {
        let now = self.now()
        try await rows.forgetExpired(before: now)
        return try await rows.sweep(now: now)
    }
}
#endif
