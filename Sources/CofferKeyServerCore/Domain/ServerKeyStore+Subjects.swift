#if Server
import Foundation

/// An operator's reads: what the server holds for a subject, and which
/// subjects it holds keys for. Neither opens a key.
extension ServerKeyStore {
    /// `subject`'s keys in `realm` (versions, minimum) and its shred state.
    public func describe(realm: String, subject: String) async throws -> SubjectKeys {
        try await rows.subjectKeys(realm: realm, subject: subject)
    }

    /// The subjects of `realm` with a key or a shred, in order: at most
    /// `limit` (1 to 1,000) after `after` ("" for the first page).
    public func subjects(realm: String, after: String = "", limit: Int = 100) async throws -> [String] {
        guard (1...1000).contains(limit) else {
            throw KeyServerError(.badRequest, "limit is a whole number from 1 to 1,000")
        }
        return try await rows.subjects(realm: realm, after: after, limit: limit)
    }

    /// Refuses a subject the server holds nothing for (an operator's
    /// typo). Read before, not inside, the change it guards: being known
    /// only grows (a key's rows stay, and a shred leaves its mark for
    /// ever), so the answer cannot turn false in between, but for the
    /// undo of a shred of a subject never seen, racing a change without
    /// `create`, which then makes that subject a key, as `create` would.
    func requireKnown(realm: String, subject: String) async throws {
        guard try await describe(realm: realm, subject: subject).known else { throw Self.unknown(subject) }
    }

    static func unknown(_ subject: String) -> KeyServerError {
        KeyServerError(
            .subjectUnknown,
            "the server holds no key for this subject; say create to make one (or to shred a subject not seen yet)")
    }
}
#endif
