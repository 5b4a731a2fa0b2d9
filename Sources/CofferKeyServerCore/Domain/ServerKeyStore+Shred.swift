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
    /// Without `creating`, a subject the server has never held a key for
    /// is refused as `subject-unknown` (a shred of a subject not yet seen
    /// is permanent: its keys answer 410 from their first request).
    @discardableResult
    public func shred(
        realm: String, subject: String, after window: Int64, creating: Bool = true, by actor: String = "server"
    ) async throws -> Int64 {
        try Self.checkUndoWindow(window)
        if !creating { try await requireKnown(realm: realm, subject: subject) }
        let now = self.now()
        let when = try await rows.shred(
            realm: realm, subject: subject, at: now + window, now: now,
            audit: .subject(actor: actor, action: "shred", realm: realm, subject: subject))
        try await sweep()
        return when
    }

    /// What ``shred(realm:subject:after:creating:by:)`` would do, done
    /// not: the subject's keys and when they would be destroyed (a shred
    /// already pending keeps its earlier time). Refuses what the shred
    /// would refuse: an unknown subject without `creating`, a subject
    /// already shredded.
    public func shredPreview(realm: String, subject: String, after window: Int64, creating: Bool = false)
        async throws -> (keys: SubjectKeys, shredAt: Int64)
    {
        try Self.checkUndoWindow(window)
        let keys = try await describe(realm: realm, subject: subject)
        if !creating && !keys.known { throw Self.unknown(subject) }
        if keys.shredded { throw KeyServerError(.keyShredded, "the subject's keys were destroyed") }
        let at = now() + window
        return (keys, keys.shredAt.map { min($0, at) } ?? at)
    }

    static func checkUndoWindow(_ window: Int64) throws {
        guard window >= 0, window <= 366 * 86400 else {
            throw KeyServerError(.invalidUndoWindow, "the undo window is 0 to 31,622,400 seconds (366 days)")
        }
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
