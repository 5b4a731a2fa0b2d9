import Crypto
import Foundation
import Testing

@testable import Coffer

#if canImport(Glibc)
import Glibc
#endif

/// `KeyRingReader`, which a key server rereads its KEK ring through: it
/// unlocks the file only when its bytes change, and checks the rollback
/// mark on every read.
@Suite struct KeyRingReaderTests {
    @Test func unlocksOnlyWhenTheFileChanges() throws {
        let folder = try ScratchFolder()
        let store = KeyRingStore(
            path: folder.path + "/ring.ckr", secret: .key(SymmetricKey(size: .bits256)), rollbackGuard: nil)
        let created = try store.create()
        let reader = KeyRingReader(store)
        #expect(try reader.read().keyRing.primaryID == created.keyRing.primaryID)
        #expect(try reader.read().generation == 1)
        #expect(reader.unlocks == 1)
        // Another process rotates the ring: the next read sees the new primary.
        let rotated = try store.modify { file in try file.update { try $0.rotate() } }
        let again = try reader.read()
        #expect(again.keyRing.primaryID == rotated && again.generation == 2)
        #expect(reader.unlocks == 2)
        _ = try reader.read()
        #expect(reader.unlocks == 2)
    }

    /// A ring the reader created is not unlocked by its next read.
    @Test func aRingItCreatedIsNotUnlockedAgain() throws {
        let folder = try ScratchFolder()
        let store = KeyRingStore(
            path: folder.path + "/ring.ckr", secret: .key(SymmetricKey(size: .bits256)), rollbackGuard: nil)
        let reader = KeyRingReader(store)
        let created = try reader.create()
        #expect(try reader.read().keyRing.primaryID == created.keyRing.primaryID)
        #expect(reader.unlocks == 0)
        #expect(throws: CofferError(.refused, "")) { try reader.create() }
    }

    /// An older copy put back byte for byte, the very bytes the reader
    /// last unlocked, is refused although it is not unlocked again.
    @Test func refusesAnOlderCopyWithoutUnlockingIt() throws {
        let folder = try ScratchFolder()
        let marks = StateFileRollbackGuard(path: folder.path + "/state/generations")
        let store = KeyRingStore(
            path: folder.path + "/ring.ckr", secret: .key(SymmetricKey(size: .bits256)), rollbackGuard: marks)
        try store.create()
        let reader = KeyRingReader(store)
        #expect(try reader.read().generation == 1)
        let snapshot = try Data(contentsOf: URL(fileURLWithPath: store.path))
        try store.modify { file in try file.update { try $0.rotate() } }
        try snapshot.write(to: URL(fileURLWithPath: store.path))
        chmod(store.path, 0o600)
        #expect(throws: CofferError(.rolledBack, "")) { _ = try reader.read() }
        #expect(reader.unlocks == 1)
    }

    /// A file that is no longer a key ring fails as `read()` does, and the
    /// ring it held before is not handed out in its place.
    @Test func aDamagedFileFails() throws {
        let folder = try ScratchFolder()
        let store = KeyRingStore(
            path: folder.path + "/ring.ckr", secret: .key(SymmetricKey(size: .bits256)), rollbackGuard: nil)
        try store.create()
        let reader = KeyRingReader(store)
        _ = try reader.read()
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: store.path)))
        bytes[bytes.count - 1] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: store.path))
        chmod(store.path, 0o600)
        #expect(throws: CofferError.self) { _ = try reader.read() }
        #expect(throws: CofferError.self) { _ = try store.read() }
        #expect(reader.unlocks == 1)
    }
}
