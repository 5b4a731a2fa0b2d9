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
    /// SHA-256 of the previous entry's hash and this entry's encoding.
    public let hash: Data

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

    /// The entry that follows one whose hash is `previous`.
    init(seq: Int64, at: Int64, record: Record, previous: Data) {
        self.init(
            seq: seq, at: at, actor: record.actor, action: record.action, realm: record.realm,
            subject: record.subject, device: record.device, purpose: record.purpose, version: record.version,
            detail: record.detail, hash: Data())
        self = self.with(hash: chained(after: previous))
    }

    init(
        seq: Int64, at: Int64, actor: String, action: String, realm: String, subject: String, device: String,
        purpose: String, version: Int64, detail: String, hash: Data
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
    }

    func with(hash: Data) -> AuditEntry {
        AuditEntry(
            seq: seq, at: at, actor: actor, action: action, realm: realm, subject: subject, device: device,
            purpose: purpose, version: version, detail: detail, hash: hash)
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

    /// SHA-256 over `previous` and this entry's encoding (docs/key-server-audit.md): a label, then each field as a 4-byte big-endian length
    /// and its UTF-8 bytes, numbers in decimal, in the order below, which
    /// ``encodeNaming(at:_:)`` and ``encodeTail(at:_:)`` follow for
    /// PostgreSQL. Each field is fed to the hash as it is encoded, with no
    /// array built: every key release hashes one entry on SQLite's writer.
    func chained(after previous: Data) -> Data {
        var hasher = SHA256()
        hasher.update(data: previous)
        Self.feed(Self.label, to: &hasher)
        Self.feed(String(seq), to: &hasher)
        Self.feed(String(at), to: &hasher)
        Self.feed(actor, to: &hasher)
        Self.feed(action, to: &hasher)
        Self.feed(realm, to: &hasher)
        Self.feed(subject, to: &hasher)
        Self.feed(device, to: &hasher)
        Self.feed(purpose, to: &hasher)
        Self.feed(String(version), to: &hasher)
        Self.feed(detail, to: &hasher)
        return Data(hasher.finalize())
    }

    private static let label = "coffer audit v1"

    private static func feed(_ field: String, to hasher: inout SHA256) {
        var field = field
        field.withUTF8 { utf8 in
            withUnsafeBytes(of: UInt32(utf8.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(utf8))
        }
    }
}

/// Checks a chain read in order, entry by entry; remembers where it broke.
public struct AuditVerifier: Sendable {
    public private(set) var checked: Int64 = 0
    /// The first entry that does not follow from the one before (or the
    /// first missing one), and why.
    public private(set) var broken: (seq: Int64, reason: String)?
    private var previous = AuditEntry.genesis
    /// Heads the chain must pass through, in order: the server's anchors
    /// and one an operator kept, each with what it is.
    private var waypoints: [(head: AuditHead, what: String)] = []
    /// The last anchor the chain passed through (0 for none).
    public private(set) var anchoredThrough: Int64 = 0

    public init() {}

    /// The last entry checked, once there is one.
    public var head: AuditHead? { checked == 0 ? nil : AuditHead(seq: checked, hash: previous) }

    /// The chain must reach each anchor's number with its hash, and
    /// `expected` too when given.
    mutating func pass(through anchors: [AuditAnchor], expected: AuditHead?) {
        waypoints = anchors.map { ($0.head, "anchored by the server") }
        if let expected { waypoints.append((expected, "expected (--expect-head)")) }
        waypoints.sort { $0.head.seq < $1.head.seq }
    }

    /// A stored anchor the KEK's anchor key did not make.
    mutating func forged(_ anchor: AuditAnchor) {
        broken = (anchor.seq, "the anchor stored for it was not made with the server's key")
    }

    /// After the last entry: a waypoint past it means the chain was cut.
    mutating func finish() {
        guard broken == nil, let next = waypoints.first else { return }
        broken = (
            next.head.seq,
            "the chain ends at entry \(checked), but entry \(next.head.seq) was \(next.what): entries were removed"
        )
    }

    /// Checks the next entry; false once the chain is broken.
    @discardableResult
    public mutating func check(_ entry: AuditEntry) -> Bool {
        guard broken == nil else { return false }
        let expected = checked + 1
        guard entry.seq == expected else {
            broken = (
                expected, entry.seq > expected ? "entry \(expected) is missing" : "entry \(entry.seq) is out of order"
            )
            return false
        }
        guard entry.chained(after: previous) == entry.hash else {
            broken = (entry.seq, "its hash does not follow from its fields and the entry before it")
            return false
        }
        previous = entry.hash
        checked = entry.seq
        while let next = waypoints.first, next.head.seq == entry.seq {
            guard ConstantTime.equal(next.head.hash, entry.hash) else {
                broken = (entry.seq, "its hash is not the one \(next.what): the chain was rewritten up to here")
                return false
            }
            if next.what.hasPrefix("anchored") { anchoredThrough = entry.seq }
            waypoints.removeFirst()
        }
        return true
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
    /// Reads the whole audit chain in order, 1,000 entries at a time, and
    /// checks every link; `progress` hears how many were checked.
    /// Every stored anchor must be the server's (made with the key the
    /// KEK opens) and lie on the chain, and so must `expected`, a head an
    /// operator kept (``AuditHead``).
    public func verifyAudit(expecting expected: AuditHead? = nil, progress: (@Sendable (Int64) -> Void)? = nil)
        async throws -> AuditVerifier
    {
        var verifier = AuditVerifier()
        let (anchors, forged) = try await authenticAnchors()
        if let forged {
            verifier.forged(forged)
            return verifier
        }
        verifier.pass(through: anchors, expected: expected)
        var last: Int64 = 0
        while true {
            let page = try await rows.auditEntries(after: last, limit: 1000)
            if page.isEmpty {
                verifier.finish()
                return verifier
            }
            for entry in page where !verifier.check(entry) { return verifier }
            last = page.last!.seq
            progress?(last)
        }
    }

    /// Every audit entry about one subject, in order (what an operator
    /// exports when the subject asks what happened to their keys).
    public func auditHistory(realm: String, subject: String) async throws -> [AuditEntry] {
        try await rows.auditEntries(realm: realm, subject: subject)
    }
}
#endif
