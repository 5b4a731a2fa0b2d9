#if Server
import Coffer
import Crypto
import Foundation

/// The server would not anchor the audit chain's head: the chain in the
/// database no longer extends the last anchor the server knows of
/// (security review 4, H8). The description names the entry that breaks.
public struct AuditAnchorRefusal: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// What one process knows of the anchors between its calls.
struct AnchorState: Sendable {
    /// The last anchor this process made, or read from its checkpoint
    /// file at start: the database must still hold it, as made.
    var known: AuditAnchor?
    /// Anchors refused because the chain no longer extends the last one.
    var refusals = 0
    /// Anchors not written for another reason (the database, the key).
    var failures = 0
}

extension ServerKeyStore {
    /// Takes `anchor` (the last line of the checkpoint file the server
    /// appends to) as one this server made: the next anchor is made only
    /// if the database still holds it and the chain extends it. Checked
    /// under the anchor key when used, not here.
    public func trustAuditAnchor(_ anchor: AuditAnchor) {
        anchoring.withLock { state in
            if (state.known?.seq ?? 0) < anchor.seq { state.known = anchor }
        }
    }

    /// Anchors refused (the chain no longer extends the last anchor) and
    /// anchors not written for another reason, since this process started.
    public var anchorCounts: (refusals: Int, failures: Int) {
        anchoring.withLock { ($0.refusals, $0.failures) }
    }

    /// Anchors the chain's head (see ``AuditAnchor``) and returns the
    /// anchor, or nil when the chain is empty; replicas anchoring the same
    /// head at once store it once. The head is anchored only when the
    /// chain from the last anchor to it verifies (read incrementally: the
    /// entries since that anchor), and, when this process made or was
    /// given an anchor before, only while the database still holds that
    /// anchor and the chain passes through it. Otherwise it throws
    /// ``AuditAnchorRefusal`` naming the entry that breaks, so that a
    /// database writer who relinks the chain and deletes the anchors past
    /// the cut cannot have the server vouch for the forged head.
    @discardableResult
    public func anchorAudit() async throws -> AuditAnchor? {
        do {
            let known = anchoring.withLock { $0.known }
            guard let head = try await rows.auditHead() else {
                if let known {
                    throw AuditAnchorRefusal(
                        description:
                            "the audit chain is empty, but entry \(known.seq) was anchored: entries were removed"
                    )
                }
                return nil
            }
            let key = try await auditAnchorKey()
            let base = try await anchorBase(known: known, key: key)
            try await checkChain(from: base, to: head)
            let anchor = AuditAnchor(head: head, at: now(), key: key)
            try await rows.addAuditAnchor(anchor)
            anchoring.withLock { $0.known = anchor }
            return anchor
        } catch let refusal as AuditAnchorRefusal {
            anchoring.withLock { $0.refusals += 1 }
            throw refusal
        } catch {
            anchoring.withLock { $0.failures += 1 }
            throw error
        }
    }

    /// The anchor the chain must pass through: the database's last,
    /// authentic, and at or past `known`, which must still be stored as made.
    private func anchorBase(known: AuditAnchor?, key: SymmetricKey) async throws -> AuditHead? {
        if let known {
            guard known.isAuthentic(under: key) else {
                throw AuditAnchorRefusal(
                    description:
                        "the anchor of entry \(known.seq) from the checkpoint file was not made with the server's key")
            }
            let stored = try await rows.auditAnchors(after: known.seq - 1, limit: 1).first
            guard let stored, stored.seq == known.seq, ConstantTime.equal(stored.hash, known.hash) else {
                throw AuditAnchorRefusal(
                    description:
                        "the anchor of entry \(known.seq), which this server made, is no longer in the database as made: anchors were deleted or replaced"
                )
            }
        }
        guard let last = try await rows.lastAuditAnchor() else { return known?.head }
        guard last.isAuthentic(under: key) else {
            throw AuditAnchorRefusal(
                description: "the anchor stored for entry \(last.seq) was not made with the server's key")
        }
        return last.head
    }

    /// Reads the entries from `base` to `head` and checks every link.
    private func checkChain(from base: AuditHead?, to head: AuditHead) async throws {
        let start = base?.seq ?? 0
        guard head.seq >= start else {
            throw AuditAnchorRefusal(
                description:
                    "the audit chain ends at entry \(head.seq), but entry \(start) was anchored: entries were removed")
        }
        var previous = base?.hash ?? AuditEntry.genesis
        let links = try await storedAuditLinkKey()
        var keyed = false
        var reached = start
        var after = max(start - 1, 0)
        var sawBase = start == 0
        while reached < head.seq || (start > 0 && after < start) {
            let page = try await rows.auditEntries(after: after, limit: 1000)
            guard let last = page.last else { break }
            for entry in page where entry.seq <= head.seq {
                if entry.seq == start {
                    guard ConstantTime.equal(entry.hash, previous) else {
                        throw AuditAnchorRefusal(
                            description:
                                "entry \(start)'s hash is not the one anchored: the chain was rewritten up to there")
                    }
                    sawBase = true
                    keyed = !entry.link.isEmpty
                    continue
                }
                guard sawBase else {
                    throw AuditAnchorRefusal(
                        description: "entry \(start), which was anchored, is missing from the audit chain")
                }
                guard entry.seq == reached + 1 else {
                    throw AuditAnchorRefusal(description: "entry \(reached + 1) is missing from the audit chain")
                }
                if let fault = entry.fault(after: previous, links: links, keyed: &keyed) {
                    throw AuditAnchorRefusal(description: "audit entry \(entry.seq): \(fault)")
                }
                previous = entry.hash
                reached = entry.seq
            }
            after = last.seq
            if last.seq >= head.seq { break }
        }
        guard sawBase, reached == head.seq, ConstantTime.equal(previous, head.hash) else {
            throw AuditAnchorRefusal(
                description: "the audit chain from entry \(start) does not reach its head \(head.seq) unbroken")
        }
    }
}
#endif
