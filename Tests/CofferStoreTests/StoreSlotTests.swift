import Coffer
import CofferStore
import Crypto
import Foundation
import Testing

/// A store's ways in (docs/store.md, "Unlock slots"): its secret changed,
/// slots added, replaced and removed, a recovery key; and the lifetime
/// calls an app needs (open or create, close, delete a record).
@Suite struct StoreSlotTests {
    static let fast = RecordStoreTests.fast
    static let old = UnlockSecret.password("the old passphrase")
    static let new = UnlockSecret.password("the new passphrase")

    static func made(_ folder: RecordStoreTests.Folder) throws -> RecordStore {
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(), secret: old, kdf: fast, rollbackGuard: nil)
        for name in ["Grandma", "Tom", "Ann"] {
            try store.put(
                ["to": .text(name), "description": .text("for \(name)"), "email": .text("\(name)@x")], into: "presents")
        }
        return store
    }

    static func code(_ body: () throws -> Void) -> CofferError.Code? {
        do { try body() } catch let error as CofferError { return error.code } catch { return nil }
        return nil
    }

    static func open(_ folder: RecordStoreTests.Folder, _ secret: UnlockSecret) throws -> RecordStore {
        try RecordStore.open(sqlite: folder.database, secret: secret, rollbackGuard: nil)
    }

    @Test func aChangedPassphraseOpensTheStoreAndTheOldOneNoLonger() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try Self.made(folder)
        let primaryBefore = try store.keySlots().count
        #expect(primaryBefore == 1)
        let primary = try store.changeSecret(to: Self.new, kdf: Self.fast)
        // The records were not rewritten, and still open in the same handle.
        #expect(try store.find("presents", where: "to", equals: .text("Tom")).count == 1)
        try store.close()
        #expect(Self.code { _ = try Self.open(folder, Self.old) } == .wrongPassword)
        let reopened = try Self.open(folder, Self.new)
        let found = try reopened.find("presents", where: "email", equals: .text("ann@x"))
        #expect(found.first?["description"] == .text("for Ann"))
        #expect(try reopened.keySlots().count == 1)
        // What is sealed from now on is under the new primary key.
        let id = try reopened.put(["to": .text("Eve"), "description": .text("new")], into: "presents")
        #expect(try reopened.get("presents", id: id)?["description"] == .text("new"))
        #expect(primary != 0)
    }

    @Test func aRecoveryKeyOpensBesideThePassphraseUntilItsSlotGoes() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try Self.made(folder)
        let recovery = try store.addRecoveryKey()
        #expect(try store.keySlots().map { $0.kdf == nil } == [false, true])
        try store.close()
        let byRecovery = try Self.open(folder, try .recoveryKey(recovery.text))
        #expect(try byRecovery.fetchCount(StoreQuery("presents")) == 3)
        // Recovery after a forgotten passphrase: a new one, from the recovery key.
        try byRecovery.changeSecret(to: Self.new, kdf: Self.fast)
        try byRecovery.close()
        #expect(Self.code { _ = try Self.open(folder, recovery.unlockSecret) } == .invalidArgument)  // no key slot left
        let byNew = try Self.open(folder, Self.new)
        let again = try byNew.addRecoveryKey()
        #expect(try byNew.removeSlot(openedBy: again.unlockSecret) == 1)
        #expect(try byNew.keySlots().count == 1)
        try byNew.close()
        #expect(Self.code { _ = try Self.open(folder, again.unlockSecret) } == .invalidArgument)
        #expect(try Self.open(folder, Self.new).fetchCount(StoreQuery("presents")) == 3)
    }

    /// A key server's rotation, as `unlock(purpose:_:moving:)` follows it:
    /// the older key's slot gives way to the current key's, the passphrase
    /// slot beside it stays.
    @Test func aReplacedSlotOpensWithTheNewKeyAndKeepsTheOthers() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try Self.made(folder)
        let version1 = UnlockSecret.key(.init(size: .bits256))
        let version2 = UnlockSecret.key(.init(size: .bits256))
        try store.addSlot(for: version1)
        #expect(try store.replaceSlot(openedBy: version1, with: version2) == 1)
        try store.close()
        #expect(Self.code { _ = try Self.open(folder, version1) } == .wrongPassword)
        _ = try Self.open(folder, version2)
        _ = try Self.open(folder, Self.old)
    }

    @Test func slotChangesThatWouldLockEveryoneOutAreRefused() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try Self.made(folder)
        #expect(Self.code { try store.removeSlot(at: 0) } == .refused)
        #expect(Self.code { try store.removeSlot(at: 3) } == .invalidArgument)
        #expect(Self.code { try store.removeSlot(openedBy: Self.new) } == .wrongPassword)
        for _ in 1..<8 { try store.addSlot(for: .key(.init(size: .bits256))) }
        #expect(Self.code { try store.addSlot(for: .key(.init(size: .bits256))) } == .invalidArgument)
        #expect(try store.keySlots().count == 8)
        try store.close()
        _ = try Self.open(folder, Self.old)
    }

    /// Another handle (another process) holding the store learns that its
    /// secret changed, and opens it again with the new one.
    @Test func anotherHandleIsToldToOpenAgain() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try Self.made(folder)
        let other = try Self.open(folder, Self.old)
        try store.changeSecret(to: Self.new, kdf: Self.fast)
        do {
            _ = try other.put(["to": .text("X"), "description": .text("y")], into: "presents")
            Issue.record("a write went through a key ring whose secret changed")
        } catch let error as CofferError {
            #expect(error.code == .refused)
            #expect(error.description.contains("open it again with the new secret"), "\(error)")
        }
        // Adding a slot keeps the data key: a third handle follows it.
        let third = try Self.open(folder, Self.new)
        try store.addSlot(for: Self.old, kdf: Self.fast)
        #expect(try third.put(["to": .text("Z"), "description": .text("z")], into: "presents") != .null)
        #expect(try third.keySlots().count == 2)
    }

    /// A rotation under way re-seals under the primary it began with: a new
    /// primary from a secret change now would be disabled at its end.
    @Test func theSecretWaitsForARotationUnderWay() throws {
        struct Stop: Error {}
        let folder = try RecordStoreTests.Folder()
        let store = try Self.made(folder)
        #expect(throws: Stop.self) { try store.rotateKeys(batchSize: 1) { _ in throw Stop() } }
        #expect(try store.pendingJob() != nil)
        #expect(Self.code { try store.changeSecret(to: Self.new, kdf: Self.fast) } == .refused)
        try store.addSlot(for: Self.new, kdf: Self.fast)  // no new primary: allowed
        try store.rotateKeys()
        try store.changeSecret(to: Self.new, kdf: Self.fast)
        #expect(try store.verify().isIntact)
    }

    @Test func openOrCreateMakesTheStoreOnceAndThenOpensIt() throws {
        let folder = try RecordStoreTests.Folder()
        let schema = try RecordStoreTests.schema()
        let first = try RecordStore.open(
            orCreate: folder.database, schema: schema, secret: Self.old, kdf: Self.fast, rollbackGuard: nil)
        let id = try first.put(["to": .text("Tom"), "description": .text("a kite")], into: "presents")
        try first.close()
        let second = try RecordStore.open(
            orCreate: folder.database, schema: schema, secret: Self.old, kdf: Self.fast, rollbackGuard: nil)
        #expect(try second.get("presents", id: id)?["description"] == .text("a kite"))
        #expect(
            Self.code {
                _ = try RecordStore.open(
                    orCreate: folder.database, schema: schema, secret: Self.new, kdf: Self.fast, rollbackGuard: nil)
            } == .wrongPassword)
    }

    @Test func aClosedStoreRefusesEveryCall() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try Self.made(folder)
        try store.close()
        try store.close()
        for call in [
            { _ = try store.get("presents", id: .integer(1)) },
            { _ = try store.put(["to": .text("X")], into: "presents") },
            { _ = try store.keySlots() },
            { try store.changeSecret(to: Self.new, kdf: Self.fast) },
            { _ = try store.read { try $0.fetchCount(StoreQuery("presents")) } },
        ] as [() throws -> Void] {
            do {
                try call()
                Issue.record("a closed store answered")
            } catch let error as CofferError {
                #expect(error.code == .refused)
                #expect(error.description.contains("is closed"))
            }
        }
        // Closed means closed: the file can go, and the store opens afresh.
        _ = try Self.open(folder, Self.old)
    }

    struct Present: SealedRecord, Equatable {
        static let storeTable = "presents"
        var id: Int64?
        var to: String
        var description: String?
    }

    @Test func aRecordIsDeletedByItself() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try Self.made(folder)
        let kite = try store.put(Present(id: nil, to: "Tom", description: "a kite"))
        #expect(try store.delete(kite))
        #expect(try !store.delete(kite))
        #expect(try store.get(Present.self, id: .integer(kite.id!)) == nil)
        #expect(Self.code { try store.delete(Present(id: nil, to: "Tom")) } == .invalidArgument)
    }
}

#if Server
import CofferStorePostgres

extension StoreSlotTests {
    /// The same slot changes on a PostgreSQL store: one state change each,
    /// seen by a second handle (another server).
    @Test(.enabled(if: PostgresStoreTests.available)) func slotsChangeOnPostgres() throws {
        let namespace = "slots_" + String(UUID().uuidString.prefix(8)).lowercased()
        let store = try PostgresStoreTests.store(try RecordStoreTests.schema(), in: namespace)
        let url = try PostgresStoreTests.url(namespace)
        let password = try #require(PostgresStoreTests.server).password
        let id = try store.put(["to": "Ann", "description": "a book"], into: "presents")
        let recovery = try store.addRecoveryKey()
        let other = try RecordStore.open(
            postgres: url, password: password, secret: try .recoveryKey(recovery.text), rollbackGuard: nil)
        #expect(try other.get("presents", id: id)?["description"] == "a book")
        try store.changeSecret(to: Self.new, kdf: Self.fast)
        #expect(Self.code { _ = try other.get("presents", id: id) } == .refused)
        #expect(
            Self.code {
                _ = try RecordStore.open(
                    postgres: url, password: password, secret: recovery.unlockSecret, rollbackGuard: nil)
            } == .invalidArgument)
        let again = try RecordStore.open(postgres: url, password: password, secret: Self.new, rollbackGuard: nil)
        #expect(try again.keySlots().count == 1)
        #expect(try again.get("presents", id: id)?["description"] == "a book")
        try again.close()
        try other.close()
        try store.close()
    }
}
#endif
