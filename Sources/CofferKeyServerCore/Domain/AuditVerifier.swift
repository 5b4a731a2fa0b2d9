#if Server
import Coffer
import Crypto
import Foundation

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
    /// The first entry whose link is keyed (nil while none was checked).
    public private(set) var keyedFrom: Int64?
    /// The key keyed links are checked under; nil when the database holds
    /// none (a keyed entry is then refused).
    private let links: AuditLinkKey?

    /// A verifier without the link key: entries linked by SHA-256 alone
    /// (written before links were keyed) verify, keyed ones do not.
    public init() { links = nil }

    init(links: AuditLinkKey?) { self.links = links }

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
        var keyed = keyedFrom != nil
        if let fault = entry.fault(after: previous, links: links, keyed: &keyed) {
            broken = (entry.seq, fault)
            return false
        }
        if keyed, keyedFrom == nil { keyedFrom = entry.seq }
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

extension ServerKeyStore {
    /// Reads the whole audit chain in order, 1,000 entries at a time, and
    /// checks every link; `progress` hears how many were checked.
    /// Every stored anchor must be the server's (made with the key the
    /// KEK opens) and lie on the chain, and so must `expected`, a head an
    /// operator kept (``AuditHead``).
    public func verifyAudit(expecting expected: AuditHead? = nil, progress: (@Sendable (Int64) -> Void)? = nil)
        async throws -> AuditVerifier
    {
        var verifier = AuditVerifier(links: try await storedAuditLinkKey())
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
}
#endif
