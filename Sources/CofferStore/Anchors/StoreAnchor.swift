import Coffer
import Crypto
import Foundation

/// A store's state as its anchors keep it (docs/store.md, "Anchors"): the
/// epoch of its keys and schema, each table's shard sequence numbers, and
/// a digest that names the exact record set. Every commit raises the epoch
/// or a sequence number, never lowers one, so a state *extends* another
/// when none of its numbers is lower; equal numbers with another digest is
/// a fork (a restore that writers then moved on from).
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

    /// A state read back from an anchor, at most 64 KiB, checked.
    public init(json: Data) throws {
        guard json.count <= 1 << 16 else { throw CofferError(.malformed, "an anchored state is at most 64 KiB") }
        do { self = try JSONDecoder().decode(Self.self, from: json) } catch {
            throw CofferError(.malformed, "an anchored store state is not the JSON Coffer writes")
        }
        guard digest.count == 64, digest.allSatisfy(\.isHexDigit),
            sequences.values.allSatisfy({ $0.count == RecordSetDigest.shards })
        else { throw CofferError(.malformed, "an anchored store state has a bad digest or shard count") }
    }
}

/// Where a store's newest state is kept outside its database, so that a
/// database restored to an older state is refused by every process that
/// asks (docs/store.md, "Anchors"): the state folder of this user
/// (``FolderStoreAnchor``), a keychain (``KeychainStoreAnchor``), or
/// coffer-server (`coffer store --anchor-server`).
public protocol StoreAnchor: Sendable {
    /// Names the anchor in messages.
    var location: String { get }
    /// The newest state anchored for the store `storeID` (32 hex digits), or nil.
    func anchoredState(store storeID: String) throws -> StoreAnchorState?
    /// Anchors `state` when it extends the anchored one and returns what is
    /// anchored afterwards; an older state (another process published a
    /// newer one meanwhile) leaves it as it is. A fork is refused
    /// (`rolledBack`).
    @discardableResult
    func publish(_ state: StoreAnchorState, store storeID: String) throws -> StoreAnchorState
    /// Anchors exactly `state`, older or not: a restore accepted on purpose
    /// (`coffer store accept-rollback`).
    func accept(_ state: StoreAnchorState, store storeID: String) throws
}

/// When a store publishes its state to its anchors: after `commits`
/// commits or `interval` seconds since the last time, whichever comes
/// first, and always after a job and at close; it checks the database
/// against them at the same moments (and when it starts using them).
public struct StoreAnchorPolicy: Sendable, Equatable {
    public var interval: TimeInterval
    public var commits: Int

    public init(interval: TimeInterval = 5, commits: Int = 100) {
        self.interval = interval
        self.commits = commits
    }
}

extension StoreAnchorState {
    /// The state of a store whose digest's shards are `shards` (table → shards in order).
    static func of(storeID: [UInt8], epoch: UInt64, shards: [String: [RecordSetDigest.Shard]]) -> StoreAnchorState {
        var hash = SHA256()
        hash.update(data: Array("coffer store anchor v1".utf8))
        hash.update(data: storeID)
        withUnsafeBytes(of: epoch.bigEndian) { hash.update(bufferPointer: $0) }
        var sequences: [String: [UInt64]] = [:]
        for (table, list) in shards.sorted(by: { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }) {
            withUnsafeBytes(of: UInt32(table.utf8.count).bigEndian) { hash.update(bufferPointer: $0) }
            hash.update(data: Array(table.utf8))
            for shard in list {
                withUnsafeBytes(of: shard.sequence.bigEndian) { hash.update(bufferPointer: $0) }
                withUnsafeBytes(of: shard.tally.count.bigEndian) { hash.update(bufferPointer: $0) }
                hash.update(data: shard.tally.sum.bytes)
            }
            sequences[table] = list.map(\.sequence)
        }
        return StoreAnchorState(epoch: epoch, sequences: sequences, digest: Hex.encode(Array(hash.finalize())))
    }
}
