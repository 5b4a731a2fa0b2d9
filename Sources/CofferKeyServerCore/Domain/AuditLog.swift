#if Server
import Coffer
import Crypto
import Foundation

/// One line of the audit log: who did what to which key, when. Never a
/// key, a token or anything read from one but its subject.
public struct AuditEntry: Sendable, Equatable, Codable {
    /// 1, 2, 3, … with no gap.
    public let seq: Int64
    /// Seconds since 1970.
    public let at: Int64
    /// `subject:NAME` for a signed-in user, `operator:NAME`, or `server`.
    public let actor: String
    /// `release`, `create`, `rotate`, `retire`, `shred`, `undo-shred`,
    /// `sweep`, `rewrap`, `operator-add`, `operator-remove`.
    public let action: String
    public let realm: String
    public let subject: String
    public let device: String
    public let purpose: String
    /// The key version concerned, 0 for none.
    public let version: Int64
    /// A short note for people (a shred's time, a scope list); never a secret.
    public let detail: String
    /// The entry's link: HMAC-SHA-256, under its batch's key, of the
    /// previous entry's hash and this entry's encoding; SHA-256 of them
    /// for an entry written before links were keyed.
    public let hash: Data
    /// The nonce of the append that linked it (16 bytes; its batch's key
    /// is derived from it, docs/key-server-audit.md), or empty for an entry linked
    /// by SHA-256 alone, written before links were keyed.
    public let link: Data

    /// The entry's fields before it has a place in the chain.
    struct Record: Sendable, Equatable {
        var actor: String
        var action: String
        var realm = ""
        var subject = ""
        var device = ""
        var purpose = ""
        var version: Int64 = 0
        var detail = ""

        init(actor: String, action: String) {
            self.actor = actor
            self.action = action
        }

        init(
            actor: String, action: String, realm: String, subject: String, device: String, purpose: String,
            version: Int64, detail: String
        ) {
            (self.actor, self.action, self.realm, self.subject) = (actor, action, realm, subject)
            (self.device, self.purpose, self.version, self.detail) = (device, purpose, version, detail)
        }

        /// An action on one key.
        init(actor: String, action: String, _ name: KeyName, version: Int = 0, detail: String = "") {
            self.init(actor: actor, action: action)
            realm = name.realm
            subject = name.subject
            device = name.device
            purpose = name.purpose
            self.version = Int64(version)
            self.detail = detail
        }
    }

    /// The hash before the first entry.
    public static let genesis = Data(count: 32)

    /// The entry that follows one whose hash is `previous`, linked under
    /// `batch`'s key.
    init(seq: Int64, at: Int64, record: Record, previous: Data, batch: AuditLinkBatch) {
        self.init(
            seq: seq, at: at, actor: record.actor, action: record.action, realm: record.realm,
            subject: record.subject, device: record.device, purpose: record.purpose, version: record.version,
            detail: record.detail, hash: Data(), link: batch.nonce)
        self = self.with(hash: chained(after: previous, under: batch.key))
    }

    init(
        seq: Int64, at: Int64, actor: String, action: String, realm: String, subject: String, device: String,
        purpose: String, version: Int64, detail: String, hash: Data, link: Data
    ) {
        self.seq = seq
        self.at = at
        self.actor = actor
        self.action = action
        self.realm = realm
        self.subject = subject
        self.device = device
        self.purpose = purpose
        self.version = version
        self.detail = detail
        self.hash = hash
        self.link = link
    }

    func with(hash: Data) -> AuditEntry {
        AuditEntry(
            seq: seq, at: at, actor: actor, action: action, realm: realm, subject: subject, device: device,
            purpose: purpose, version: version, detail: detail, hash: hash, link: link)
    }

    /// The encoding of every field after `seq`: what an entry's hash covers
    /// but its place in the chain. (PostgreSQL's append links the entries
    /// it is handed: it adds the label and the number, and hashes.)
    static func encodeTail(at: Int64, _ record: Record) -> [UInt8] {
        encodeNaming(at: at, record) + encode([String(record.version), record.detail])
    }

    /// The encoding of the fields after `seq` that come before `version`:
    /// when, who, what, and the key's name. (PostgreSQL's release adds
    /// the version it found and the empty detail: ``PostgresKeyRows``.)
    static func encodeNaming(at: Int64, _ record: Record) -> [UInt8] {
        encode([String(at), record.actor, record.action, record.realm, record.subject, record.device, record.purpose])
    }

    private static func encode(_ fields: [String]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.reduce(0) { $0 + 4 + $1.utf8.count })
        for field in fields {
            withUnsafeBytes(of: UInt32(field.utf8.count).bigEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: field.utf8)
        }
        return bytes
    }

    /// The link over `previous` and this entry's encoding
    /// (docs/key-server-audit.md): a label, then each field as a 4-byte
    /// big-endian length and its UTF-8 bytes, numbers in decimal, in the
    /// order below, which ``encodeNaming(at:_:)`` and
    /// ``encodeTail(at:_:)`` follow for PostgreSQL. Under a batch key,
    /// HMAC-SHA-256 with the label `coffer audit v2`; without one (an
    /// entry written before links were keyed), SHA-256 with `coffer audit
    /// v1`. Each field is fed as it is encoded, with no array built: every
    /// key release links one entry on SQLite's writer.
    func chained(after previous: Data, under batchKey: SymmetricKey?) -> Data {
        guard let batchKey else {
            var hasher = SHA256()
            feed(previous, label: Self.label) { hasher.update(bufferPointer: $0) }
            return Data(hasher.finalize())
        }
        var mac = HMAC<SHA256>(key: batchKey)
        feed(previous, label: Self.keyedLabel) { mac.update(data: $0) }
        return Data(mac.finalize())
    }

    private func feed(_ previous: Data, label: String, _ update: (UnsafeRawBufferPointer) -> Void) {
        previous.withUnsafeBytes(update)
        Self.feed(label, update)
        Self.feed(String(seq), update)
        Self.feed(String(at), update)
        Self.feed(actor, update)
        Self.feed(action, update)
        Self.feed(realm, update)
        Self.feed(subject, update)
        Self.feed(device, update)
        Self.feed(purpose, update)
        Self.feed(String(version), update)
        Self.feed(detail, update)
    }

    private static let label = "coffer audit v1"
    static let keyedLabel = "coffer audit v2"

    /// Why this entry does not follow one whose hash is `previous`, or nil
    /// when it does. `keyed` says whether an entry before it was keyed: once
    /// one was, every later one must be, or a writer could relink the tail
    /// with SHA-256 alone. Without `links` (the server holds no link key) a
    /// keyed entry cannot be checked, and is refused.
    func fault(after previous: Data, links: AuditLinkKey?, keyed: inout Bool) -> String? {
        var batchKey: SymmetricKey?
        if link.isEmpty {
            if keyed {
                return
                    "its link is plain SHA-256, but an earlier entry's was keyed: the chain was relinked without the link key"
            }
        } else {
            guard link.count == AuditLinkKey.nonceSize else { return "its link nonce is not 16 bytes" }
            guard let links else {
                return
                    "its link is keyed, but the database holds no link key (server_secrets' audit-link-key was removed)"
            }
            batchKey = links.batchKey(nonce: link)
            keyed = true
        }
        guard ConstantTime.equal(chained(after: previous, under: batchKey), hash) else {
            return "its hash does not follow from its fields and the entry before it"
        }
        return nil
    }

    private static func feed(_ field: String, _ update: (UnsafeRawBufferPointer) -> Void) {
        var field = field
        field.withUTF8 { utf8 in
            withUnsafeBytes(of: UInt32(utf8.count).bigEndian, update)
            update(UnsafeRawBufferPointer(utf8))
        }
    }
}

extension AuditEntry.Record {
    /// A first use: `create` when this request made the row, and the `release`.
    static func firstUse(_ name: KeyName, actor: String, made: Bool, version: Int) -> [Self] {
        (made ? [Self(actor: actor, action: "create", name, version: version)] : [])
            + [Self(actor: actor, action: "release", name, version: version)]
    }

    static func sweep(realm: String, subject: String) -> Self {
        var record = Self(actor: "server", action: "sweep")
        record.realm = realm
        record.subject = subject
        record.detail = "keys destroyed"
        return record
    }
}

extension AuditEntry.Record {
    /// An action on a subject as a whole.
    static func subject(actor: String, action: String, realm: String, subject: String) -> Self {
        var record = Self(actor: actor, action: action)
        record.realm = realm
        record.subject = subject
        return record
    }
}

extension ServerKeyStore {
    /// Every audit entry about one subject, in order (what an operator
    /// exports when the subject asks what happened to their keys).
    public func auditHistory(realm: String, subject: String) async throws -> [AuditEntry] {
        try await rows.auditEntries(realm: realm, subject: subject)
    }
}
#endif
