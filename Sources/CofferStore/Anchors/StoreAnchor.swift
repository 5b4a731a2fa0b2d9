import Coffer
import Crypto
import Foundation

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
