import Foundation

/// An operator's reads (scope `keys:read`) and a shred's dry run.
extension KeyServerAdmin {
    /// What the server holds for a subject: each key's versions, never its bytes.
    public struct SubjectKeys: Sendable, Equatable, Decodable {
        public struct Key: Sendable, Equatable, Decodable {
            public let purpose: String
            /// nil for the subject's key, else the device's.
            public let device: String?
            /// The current (highest) version.
            public let current: Int
            /// The lowest version still released.
            public let minimum: Int
            /// How many versions are stored.
            public let versions: Int
        }
        public let subject: String
        public let keys: [Key]
        /// When the subject's keys are (or were) destroyed (ISO 8601), if a shred was asked for.
        public let shredAt: String?
        public let shredded: Bool
    }

    /// What a shred would do: when, and how many stored versions it would destroy.
    public struct ShredPreview: Sendable, Equatable {
        public let shredAt: String
        public let storedVersions: Int
    }

    /// `subject`'s keys and shred state.
    ///
    /// ```swift
    /// let held = try await admin.keys(subject: "alice")
    /// for key in held.keys { print(key.purpose, key.current, key.minimum) }
    /// ```
    public func keys(subject: String) async throws -> SubjectKeys {
        try await requests.send(
            "/v1/admin/keys?subject=" + Self.queryValue(subject), method: "GET", token: token,
            answer: SubjectKeys.self)
    }

    /// The subjects the server holds keys for (or was asked to shred), in
    /// order, `limit` (1 to 1,000) at a time after `after`; `next` is the
    /// `after` of the next page, nil after the last.
    public func subjects(after: String = "", limit: Int = 100) async throws -> (subjects: [String], next: String?) {
        let page = try await requests.send(
            "/v1/admin/subjects?after=\(Self.queryValue(after))&limit=\(limit)", method: "GET", token: token,
            answer: KeyServerBody.Subjects.self)
        return (page.subjects, page.next)
    }

    /// What ``shred(subject:undoWindow:create:)`` would do, without doing it.
    public func shredPreview(subject: String, undoWindow: Int64, create: Bool = false) async throws -> ShredPreview {
        let answer = try await requests.send(
            "/v1/admin/subjects/shred", method: "POST", token: token,
            body: KeyServerBody.Shred(
                subject: subject, undoWindowSeconds: undoWindow, create: create ? true : nil, dryRun: true),
            answer: KeyServerBody.Shredding.self)
        guard answer.dryRun == true, let versions = answer.storedVersions else {
            throw KeyClientError(.malformedResponse, "the server did not answer a dry run as one")
        }
        return ShredPreview(shredAt: answer.shredAt, storedVersions: versions)
    }

    /// `value` percent-encoded for a query: every byte but unreserved ones (RFC 3986).
    static func queryValue(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(
            CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}
