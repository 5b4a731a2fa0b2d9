#if Server
import Coffer
import Crypto
import Foundation

/// Where the audit chain ends: its last entry's number and hash, written
/// `SEQ:HEX` (what `coffer-server audit head` prints and `audit verify
/// --expect-head` takes).
public struct AuditHead: Sendable, Equatable, CustomStringConvertible {
    public let seq: Int64
    public let hash: Data

    public init(seq: Int64, hash: Data) {
        self.seq = seq
        self.hash = hash
    }

    /// `SEQ:HEX`, the hash 64 hex digits; anything else is `invalidArgument`.
    public init(_ text: String) throws {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let seq = Int64(parts[0]), seq >= 1, parts[1].utf8.count == 64,
            let hash = Hex.decode(parts[1])
        else { throw CofferError(.invalidArgument, "an audit head is SEQ:HASH, a number and 64 hex digits") }
        self.init(seq: seq, hash: Data(hash))
    }

    public var description: String { "\(seq):\(Hex.encode(Array(hash)))" }
}

/// A head vouched for by the server (security review 3, G4): HMAC-SHA-256
/// under a key only the KEK opens, over a label, the number and the hash.
/// The chain's links make an anchor at `seq` vouch for every entry up to
/// it. Keyed links (docs/key-server-audit.md) already stop a writer without the
/// KEK relinking the chain; what anchors add is the head: a writer who
/// cuts the tail breaks every anchor past the cut, unless they delete
/// those anchors too, which the heads kept outside the database
/// (``AuditAnchor/line``, `--expect-head`) show.
public struct AuditAnchor: Sendable, Equatable {
    public let seq: Int64
    public let hash: Data
    /// When it was made, seconds since 1970 (not covered by the MAC).
    public let at: Int64
    public let mac: Data

    init(seq: Int64, hash: Data, at: Int64, mac: Data) {
        self.seq = seq
        self.hash = hash
        self.at = at
        self.mac = mac
    }

    init(head: AuditHead, at: Int64, key: SymmetricKey) {
        self.init(seq: head.seq, hash: head.hash, at: at, mac: Self.mac(head, key: key))
    }

    static func mac(_ head: AuditHead, key: SymmetricKey) -> Data {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Array("coffer audit anchor v1".utf8))
        mac.update(data: withUnsafeBytes(of: head.seq.bigEndian, Array.init))
        mac.update(data: head.hash)
        return Data(mac.finalize())
    }

    func isAuthentic(under key: SymmetricKey) -> Bool {
        ConstantTime.equal(Self.mac(AuditHead(seq: seq, hash: hash), key: key), mac)
    }

    public var head: AuditHead { AuditHead(seq: seq, hash: hash) }

    /// The checkpoint line for a log kept outside the database.
    public var line: String {
        "coffer-audit-checkpoint head=\(head) at=\(at) mac=\(Hex.encode(Array(mac)))"
    }

    /// Reads a checkpoint line (``line``), without its line feed; anything
    /// else is `malformed`. Whether the server made it is checked where it
    /// is used, under the anchor key.
    public init(line: String) throws {
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 4, fields[0] == "coffer-audit-checkpoint", fields[1].hasPrefix("head="),
            fields[2].hasPrefix("at="), fields[3].hasPrefix("mac="),
            let head = try? AuditHead(String(fields[1].dropFirst(5))),
            let at = Int64(fields[2].dropFirst(3)), at >= 0,
            fields[3].utf8.count == 4 + 64, let mac = Hex.decode(String(fields[3].dropFirst(4)))
        else {
            throw CofferError(
                .malformed, "an audit checkpoint line is coffer-audit-checkpoint head=SEQ:HASH at=SECONDS mac=HEX")
        }
        self.init(seq: head.seq, hash: head.hash, at: at, mac: Data(mac))
    }
}

extension ServerKeyStore {
    /// The anchors' key, shared by the replicas and sealed under the KEK
    /// (as the DPoP nonce key is).
    func auditAnchorKey() async throws -> SymmetricKey {
        if let key = anchorKey.withLock({ $0 }) { return key }
        let key = try await sharedSecretKey("audit-anchor-key")
        anchorKey.withLock { $0 = key }
        return key
    }

    /// The chain's head now; nil while it is empty.
    public func auditHead() async throws -> AuditHead? { try await rows.auditHead() }

    /// Every anchor, in order, each checked against the anchor key; the
    /// first that is not authentic breaks the verification.
    func authenticAnchors() async throws -> (anchors: [AuditAnchor], forged: AuditAnchor?) {
        let key = try await auditAnchorKey()
        var anchors: [AuditAnchor] = []
        var last: Int64 = 0
        while true {
            let page = try await rows.auditAnchors(after: last, limit: 1000)
            guard let end = page.last else { return (anchors, nil) }
            for anchor in page {
                guard anchor.isAuthentic(under: key) else { return (anchors, anchor) }
                anchors.append(anchor)
            }
            last = end.seq
        }
    }
}
#endif
