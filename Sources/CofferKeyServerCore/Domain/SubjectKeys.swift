#if Server
import Foundation

/// What the server holds for one subject, as an operator may read it:
/// each key's versions and minimum, and the subject's shred state; never a
/// key's bytes.
public struct SubjectKeys: Sendable, Equatable {
    /// One key (a purpose, and a device for a key per device).
    public struct Key: Sendable, Equatable {
        public let purpose: String
        /// "" for the subject's key, else the device's.
        public let device: String
        /// The current version: the highest stored.
        public let current: Int
        /// The lowest version still released (1 unless retired).
        public let minimum: Int
        /// How many versions are stored.
        public let versions: Int

        public init(purpose: String, device: String, current: Int, minimum: Int, versions: Int) {
            self.purpose = purpose
            self.device = device
            self.current = current
            self.minimum = minimum
            self.versions = versions
        }
    }

    public let subject: String
    /// Sorted by purpose, then device.
    public let keys: [Key]
    /// When the subject's keys are (or were) destroyed, if a shred was asked for.
    public let shredAt: Int64?
    /// Whether that shred has happened.
    public let shredded: Bool

    public init(subject: String, keys: [Key], shredAt: Int64?, shredded: Bool) {
        self.subject = subject
        self.keys = keys
        self.shredAt = shredAt
        self.shredded = shredded
    }

    /// Whether the server has ever held a key for the subject (or been
    /// asked to shred it): what an operator's rotate or shred needs,
    /// unless told to create.
    public var known: Bool { !keys.isEmpty || shredAt != nil }

    /// How many stored versions a shred would destroy.
    public var storedVersions: Int { keys.reduce(0) { $0 + $1.versions } }
}
#endif
