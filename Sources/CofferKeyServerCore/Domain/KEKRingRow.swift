#if Server
import Coffer
import Foundation

/// The KEK ring kept in the key server's own database, one row that every
/// replica reads (docs/key-server-operating.md, "One KEK ring for every
/// replica"): a rotation on one replica reaches the others at their next
/// reading, with no file to copy.
///
/// The row holds the same bytes as a `kek.ckr` file: the ring sealed
/// under its root (a passphrase, a keychain key, an HSM key), so a
/// database writer without the root can neither read nor change it. What
/// such a writer can do is put an older copy back; every reading is
/// checked against the highest generation this replica has seen
/// (`rollbackGuard`, raised on each reading: trust on first use), so an
/// older ring is refused by every replica that saw a newer one.
/// Changes are compare-and-swap on the whole row: two replicas changing
/// the ring at once both land, one after the other.
public struct KEKRingRow: Sendable {
    public let store: ServerKeyStore
    public let secret: UnlockSecret
    public let rollbackGuard: (any RollbackGuard)?
    /// The last bytes read and what they unlocked, so that a reading of
    /// unchanged bytes costs no KDF.
    private let last = Locked<(Data, KeyRingFile)?>(nil)

    public init(store: ServerKeyStore, secret: UnlockSecret, rollbackGuard: (any RollbackGuard)?) {
        self.store = store
        self.secret = secret
        self.rollbackGuard = rollbackGuard
    }

    /// Whether the database keeps a KEK ring.
    public func exists() async throws -> Bool { try await store.rows.kekRing() != nil }

    /// Stores `file` as the database's ring; refused when it has one.
    public func create(_ file: KeyRingFile) async throws {
        guard try await store.rows.replaceKEKRing(try file.contents(), replacing: nil) else {
            throw CofferError(.refused, "the database keeps a KEK ring already")
        }
        try rollbackGuard?.reset(Self.guardKey(file.ringID), to: file.generation)
    }

    /// The ring, unlocked and checked against the rollback mark.
    public func read() async throws -> KeyRingFile { try await readWithBytes().file }

    func readWithBytes() async throws -> (bytes: Data, file: KeyRingFile) {
        guard let bytes = try await store.rows.kekRing() else {
            throw CofferError(.keyNotFound, "the database keeps no KEK ring")
        }
        let earlier = last.withLock { $0 }
        let file: KeyRingFile
        if let earlier, earlier.0 == bytes {
            file = earlier.1
        } else {
            file = try await BlockingWork.run { [secret] in try KeyRingFile(contents: bytes, secret: secret) }
        }
        let key = Self.guardKey(file.ringID)
        if let mark = try rollbackGuard?.highWaterMark(for: key), file.generation < mark {
            throw CofferError(
                .rolledBack,
                "the database's KEK ring is generation \(file.generation), but generation \(mark) was already seen: an older copy was put back in its place (coffer-server kek accept-restore accepts a restore made on purpose)"
            )
        }
        try rollbackGuard?.raise(key, to: file.generation)
        last.withLock { $0 = (bytes, file) }
        return (bytes, file)
    }

    /// Read, change, write, as one compare-and-swap on the row (tried
    /// again when another replica changed the ring meanwhile); the
    /// generation grows by one.
    @discardableResult
    public func modify<T>(_ change: (inout KeyRingFile) throws -> T) async throws -> T {
        for _ in 0..<16 {
            let (bytes, read) = try await readWithBytes()
            var file = read
            let result = try change(&file)
            file.generation += 1
            if try await store.rows.replaceKEKRing(try file.contents(), replacing: bytes) {
                try rollbackGuard?.raise(Self.guardKey(file.ringID), to: file.generation)
                return result
            }
        }
        throw CofferError(.refused, "the database's KEK ring kept changing under this change; try again")
    }

    /// Accepts the database's ring as it is now, even if older than the
    /// mark (a backup restored on purpose).
    public func acceptCurrentGeneration() async throws -> UInt64 {
        guard let bytes = try await store.rows.kekRing() else {
            throw CofferError(.keyNotFound, "the database keeps no KEK ring")
        }
        let file = try KeyRingFile(contents: bytes, secret: secret)
        try rollbackGuard?.reset(Self.guardKey(file.ringID), to: file.generation)
        return file.generation
    }

    /// The rollback mark's name: the one a `kek.ckr` file of the same ring
    /// has (``KeyRingStore``'s), so that a ring moved into the database keeps its mark.
    static func guardKey(_ ringID: [UInt8]) -> String { KeyRingStore.guardKey(ringID) }
}
#endif
