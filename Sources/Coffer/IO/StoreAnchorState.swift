import Foundation

/// A CofferStore's state as its anchors keep it (docs/store.md, "Anchors"): the
/// epoch of its keys and schema, each table's shard sequence numbers, and
/// a digest that names the exact record set. Every commit raises the epoch
/// or a sequence number, never lowers one, so a state *extends* another
/// when none of its numbers is lower; equal numbers with another digest is
/// a fork (a restore that writers then moved on from). It lives here, not in
/// CofferStore, because the key client carries it too (a key server keeps
/// anchors).
public struct StoreAnchorState: Sendable, Hashable, Codable, CustomStringConvertible {
    public var epoch: UInt64
    /// Table → its shards' sequence numbers, in shard order.
    public var sequences: [String: [UInt64]]
    /// Hex SHA-256 over the store id, the epoch and every shard's sequence
    /// number, count and sum (which the key ring hides; this names them).
    public var digest: String

    public init(epoch: UInt64, sequences: [String: [UInt64]], digest: String) {
        self.epoch = epoch
        self.sequences = sequences
        self.digest = digest
    }

    /// How a state stands against an anchored one.
    public enum Order: Sendable, Equatable {
        case same, newer, older
        /// Neither extends the other: not one history.
        case forked
    }

    /// How `self` stands against `anchored`.
    public func compared(to anchored: StoreAnchorState) -> Order {
        if self == anchored { return .same }
        let atLeast = Self.noneLower(self, than: anchored)
        let atMost = Self.noneLower(anchored, than: self)
        switch (atLeast, atMost) {
        case (true, false): return .newer
        case (false, true): return .older
        default: return .forked
        }
    }

    /// Whether no number of `a` is below `b`'s (a table `b` lacks is new in `a`).
    static func noneLower(_ a: StoreAnchorState, than b: StoreAnchorState) -> Bool {
        guard a.epoch >= b.epoch else { return false }
        for (table, theirs) in b.sequences {
            guard let ours = a.sequences[table], ours.count == theirs.count else { return false }
            if zip(ours, theirs).contains(where: { $0 < $1 }) { return false }
        }
        return true
    }

    public var description: String {
        let total = sequences.values.reduce(UInt64(0)) { $0 &+ $1.reduce(0, &+) }
        return "epoch \(epoch), \(total) commits to \(sequences.count) tables, digest \(digest.prefix(16))…"
    }

    /// The JSON an anchor keeps: sorted keys, no spaces.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// A state read back from an anchor (a file, a keychain item, a key
    /// server's row), at most 64 KiB, checked as strictly as the key
    /// server checks a request: an object of exactly `epoch`, `sequences`
    /// and `digest`, nothing null, a digest of 64 hex digits and
    /// ``shardsPerTable`` numbers per table.
    public init(json: Data) throws {
        guard json.count <= 1 << 16 else { throw CofferError(.malformed, "an anchored state is at most 64 KiB") }
        let members = (try? JSONSerialization.jsonObject(with: json) as? [String: Any]).map { Set($0.keys) }
        guard let members, members == ["epoch", "sequences", "digest"] else {
            let extra = members.map { $0.subtracting(["epoch", "sequences", "digest"]).sorted() } ?? []
            throw CofferError(
                .malformed,
                "an anchored store state is a JSON object of epoch, sequences and digest"
                    + (extra.isEmpty
                        ? "" : "; it has \(extra.map { "\"\(Self.printable($0))\"" }.joined(separator: ", ")) too"))
        }
        do { self = try JSONDecoder().decode(Self.self, from: json) } catch {
            throw CofferError(.malformed, "an anchored store state is not the JSON Coffer writes")
        }
        try check()
    }

    /// Throws unless the digest is 64 lowercase hex digits and every table
    /// has ``shardsPerTable`` numbers (a state decoded from a key server's
    /// answer is checked with this too).
    package func check() throws {
        guard digest.utf8.count == 64, digest.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }),
            sequences.values.allSatisfy({ $0.count == Self.shardsPerTable })
        else { throw CofferError(.malformed, "an anchored store state has a bad digest or shard count") }
    }

    /// How many shards each table's digest has (docs/store.md, "The record set").
    public static let shardsPerTable = 16

    /// A member name as an error may show it: printable ASCII, at most 40 characters.
    static func printable(_ name: String) -> String {
        String(
            String.UnicodeScalarView(name.unicodeScalars.prefix(40).map { (32..<127).contains($0.value) ? $0 : "?" }))
    }
}
