import Coffer
import Crypto
import Foundation

/// The ways into a store: its key ring's key slots (docs/store.md, "Unlock
/// slots"; the slot format is docs/key-slots.md's).
///
/// Each change below is one write of the store's state: the key ring row
/// and the state's seal, in one transaction that moves the epoch. No record
/// is rewritten. A process killed at any point leaves the store opening
/// with the secrets of before or of after, never neither. A password's KDF
/// runs before the transaction, not inside it, so writers wait only for
/// the write; should another process change the key ring meanwhile, the
/// slot is made again over its change.
extension RecordStore {
    /// The key slots, in order: a password slot names its KDF, a key slot
    /// (a KEK, a recovery key, a key server's key) says `key`.
    public func keySlots() throws -> [KeySlot] {
        try read { work in
            let state = work.state
            return state.ringFile.slots
        }
    }

    /// Locks the store with `secret` alone: a new data key wraps the key
    /// ring, every other slot goes, and the key ring gains a new primary
    /// key, so an old copy of the store opened with an old secret opens
    /// nothing sealed from now on. Returns the new primary key's id.
    ///
    /// A password that leaked: `changeSecret` then `rotateKeys()`,
    /// which seals every cell again under the new primary and disables the
    /// older keys (docs/store.md). Other processes that have the store open
    /// must open it again with the new secret; until then their
    /// transactions are refused, saying so.
    @discardableResult
    public func changeSecret(to secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt) throws -> UInt32 {
        try changeRing { ring in try ring.changeSecret(to: secret, kdf: kdf) }
    }

    /// Adds a way in: `secret` wraps the same data key as the slots there
    /// (at most eight). Returns the new slot's index.
    @discardableResult
    public func addSlot(for secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt) throws -> Int {
        try changeRing { ring in
            try ring.addSlot(for: secret, kdf: kdf)
            return ring.slots.count - 1
        }
    }

    /// Makes a new `RecoveryKey` and adds a slot for it: show its
    /// `text` to the user once, and keep it nowhere else.
    public func addRecoveryKey() throws -> RecoveryKey {
        let recovery = RecoveryKey()
        try addSlot(for: recovery.unlockSecret)
        return recovery
    }

    /// Removes slot `index` (see ``keySlots()``); the last one stays. The
    /// data key does not change, so this retires a secret that was never
    /// exposed; one that leaked calls for `changeSecret(to:kdf:)`.
    public func removeSlot(at index: Int) throws {
        try changeRing { ring in try ring.removeSlot(at: index) }
    }

    /// Removes the slot `secret` opens; returns its index.
    @discardableResult
    public func removeSlot(openedBy secret: UnlockSecret) throws -> Int {
        try changeRing { ring in
            let index = try ring.slotIndex(openedBy: secret)
            try ring.removeSlot(at: index)
            return index
        }
    }

    /// Puts a slot for `new` in place of the one `old` opens, keeping the
    /// others and the data key: a key server's key moved to its current
    /// version (CofferKeyClient's `unlock(purpose:device:_:moving:)` does it
    /// on open), a KEK moved to another keychain.
    /// Returns the slot's index.
    @discardableResult
    public func replaceSlot(openedBy old: UnlockSecret, with new: UnlockSecret, kdf: PasswordKDF = .defaultScrypt)
        throws -> Int
    {
        try changeRing { ring in try ring.replaceSlot(openedBy: old, with: new, kdf: kdf) }
    }

    /// `edit` on a copy of the key ring as of now, outside any transaction
    /// (it may run a password KDF), then the edited ring written in one
    /// state change, provided the ring is still the one edited; when
    /// another process changed it first, `edit` runs again on theirs.
    func changeRing<T>(_ edit: (inout KeyRingFile) throws -> T) throws -> T {
        for _ in 0..<8 {
            var ring = try read { work in
                let state = work.state
                return state.ringFile
            }
            let base = ring.generation
            let before = ring.keyRing.primaryID
            let result = try edit(&ring)
            ring.generation = base + 1
            do {
                try change { _, state in
                    guard state.ringFile.generation == base else { throw KeyRingMoved() }
                    // A rotation re-seals every cell under the primary it began
                    // with and then disables the others: a new primary now
                    // would be disabled at its end.
                    if ring.keyRing.primaryID != before, let job = state.job, job.kind == .rotate {
                        throw CofferError(
                            .refused,
                            "a key rotation is under way: finish it first (rotateKeys, or coffer store rotate), then change the secret"
                        )
                    }
                    state.ringFile = ring
                    state.keys = try state.keys.with(keyRing: ring.keyRing)
                }
                return result
            } catch is KeyRingMoved {
                continue
            }
        }
        throw CofferError(
            .refused, "the store's key ring kept changing under other writers; its slots were left as they are")
    }
}

/// Another writer changed the key ring between an edit and its write.
private struct KeyRingMoved: Error {}

/// Async twins: a password's KDF runs on a Dispatch thread, never on the
/// caller's (an app's main actor) or the cooperative pool.
extension RecordStore {
    /// Locks the store with `secret` alone (a new slot, every other one dropped) and makes a new
    /// primary key; returns its id. No record is rewritten.
    ///
    /// ```swift
    /// _ = try await store.changeSecret(to: .password(newPassword))
    /// ```
    @discardableResult
    public func changeSecret(to secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt) async throws -> UInt32 {
        try await BlockingWork.run { try self.changeSecret(to: secret, kdf: kdf) }
    }

    @discardableResult
    public func addSlot(for secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt) async throws -> Int {
        try await BlockingWork.run { try self.addSlot(for: secret, kdf: kdf) }
    }

    /// A new random recovery key, added as a slot of its own: show its text to the user once.
    ///
    /// ```swift
    /// let recovery = try await store.addRecoveryKey()
    /// showOnce(recovery.text)  // the user writes it down; it opens the store alone
    /// ```
    public func addRecoveryKey() async throws -> RecoveryKey {
        try await BlockingWork.run { try self.addRecoveryKey() }
    }

    @discardableResult
    public func replaceSlot(
        openedBy old: UnlockSecret, with new: UnlockSecret, kdf: PasswordKDF = .defaultScrypt
    ) async throws -> Int {
        try await BlockingWork.run { try self.replaceSlot(openedBy: old, with: new, kdf: kdf) }
    }

    @discardableResult
    public func removeSlot(openedBy secret: UnlockSecret) async throws -> Int {
        try await BlockingWork.run { try self.removeSlot(openedBy: secret) }
    }
}
