import CofferKeychain
import CofferTesting
import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import Coffer

#if canImport(Glibc)
import Glibc
#endif

/// Keychain regression tests for the security review of 0e8880c
/// (../shared/reviews/security-review.md) and the architecture review's
/// confirmed defects, named after the findings.
@Suite struct TrustDefectKeychainTests {
    static let fast = PasswordKDF.scrypt(logN: 10, r: 8, p: 1)

    func marks(_ folder: KeychainFolder) -> StateFileRollbackGuard {
        StateFileRollbackGuard(path: folder.path + "/state/generations")
    }

    /// After `changeSecret`, the data key in the old copy's slot does not
    /// open the new body (the library side of the reviewer's kcattack.py).
    @Test func F1_changeSecretUsesANewDataKey() throws {
        let folder = try KeychainFolder()
        let old = UnlockSecret.password(Array("old".utf8))
        let keychain = try FileKeychain.create(
            path: folder.keychain, secret: old, kdf: Self.fast, rollbackGuard: marks(folder))
        try keychain.add(.password(service: "s", account: "before"), data: SecretBytes(Array("one".utf8)))
        let oldCopy = Array(try Data(contentsOf: URL(fileURLWithPath: folder.keychain)))
        let changed = try keychain.changeSecret(to: .password(Array("new".utf8)), kdf: Self.fast)
        try changed.add(.password(service: "s", account: "after"), data: SecretBytes(Array("two".utf8)))
        let newBytes = Array(try Data(contentsOf: URL(fileURLWithPath: folder.keychain)))
        // Unwrap the old slot with the old passphrase, as an attacker would
        // (version 2: key slots from byte 14, bound to "CKC1" ‖ 2).
        var oldSlots = oldCopy[14...]
        let oldDataKey = try KeySlot.read(from: &oldSlots).unwrap(with: old, binding: Array("CKC1".utf8) + [2])
        var newSlots = newBytes[14...]
        for _ in 0..<newBytes[13] { _ = try KeySlot.read(from: &newSlots) }
        let headerEnd = newSlots.startIndex
        #expect(throws: (any Error).self) {
            _ = try AES.GCM._SIV.open(
                AES.GCM._SIV.SealedBox(combined: newBytes[headerEnd...]), using: oldDataKey,
                authenticating: Array(newBytes[..<headerEnd]))
        }
        // The old data key still opens the old copy: the attack is real, and the test can fail.
        let oldHeaderEnd = 14 + 80
        #expect(
            (try? AES.GCM._SIV.open(
                AES.GCM._SIV.SealedBox(combined: oldCopy[oldHeaderEnd...]), using: oldDataKey,
                authenticating: Array(oldCopy[..<oldHeaderEnd]))) != nil)
        #expect(try changed.copyData(.password(service: "s", account: "before")) == SecretBytes(Array("one".utf8)))
    }

    /// An older copy of the keychain file is `rolledBack`; accepting it on
    /// purpose makes it current again.
    @Test func F4_keychainRollbackIsRefused() throws {
        let folder = try KeychainFolder()
        let secret = UnlockSecret.key(SymmetricKey(size: .bits256))
        let keychain = try FileKeychain.create(path: folder.keychain, secret: secret, rollbackGuard: marks(folder))
        try keychain.add(.password(service: "s", account: "a"), data: SecretBytes([1]))
        let snapshot = try Data(contentsOf: URL(fileURLWithPath: folder.keychain))
        try keychain.delete(.password(service: "s", account: "a"))
        let other = try FileKeychain.open(path: folder.keychain, secret: secret, rollbackGuard: marks(folder))
        FileManager.default.createFile(
            atPath: folder.keychain + ".old", contents: snapshot, attributes: [.posixPermissions: 0o600])
        rename(folder.keychain + ".old", folder.keychain)
        do {
            _ = try other.copyMatching(.password())
            Issue.record("an older copy was read")
        } catch let error as KeychainError {
            #expect(error.code == .rolledBack, "\(error)")
        }
        #expect(try other.acceptCurrentGeneration() == 2)
        #expect(try other.copyMatching(.password()).count == 1)
    }

    /// The reviewer's lost update, made deterministic: after B's write,
    /// the file at the path is A's cached inode again, holding B's bytes
    /// (same size) with A's cached mtime. A's next `add` must not reuse its
    /// cached items and drop B's update.
    @Test func F10_cacheIsNotReusedWhenTheBytesChanged() throws {
        // The items' dates are JSON numbers of varying length, so B's file
        // has A's size only by chance: B updates until it does, and when
        // A's own size is a rare one (a date of few digits), the scenario
        // starts again with a new A rather than waiting on luck.
        var setUp: (KeychainFolder, UnlockSecret, FileKeychain, stat, String, [UInt8])?
        for _ in 0..<20 where setUp == nil {
            let folder = try KeychainFolder()
            let secret = UnlockSecret.key(SymmetricKey(size: .bits256))
            let a = try FileKeychain.create(path: folder.keychain, secret: secret, rollbackGuard: nil)
            try a.add(.password(service: "s", account: "x"), data: SecretBytes([1]))
            _ = try a.copyMatching(.password())  // A caches this version (inode I)
            var cached = stat()
            stat(folder.keychain, &cached)
            let keep = folder.path + "/inode-I"
            #expect(link(folder.keychain, keep) == 0)  // inode I survives B's rename
            let b = try FileKeychain.open(path: folder.keychain, secret: secret, rollbackGuard: nil)
            for _ in 0..<50 {
                try b.update(.password(service: "s", account: "x"), data: SecretBytes([2]))
                let written = Array(try Data(contentsOf: URL(fileURLWithPath: folder.keychain)))
                if written.count == Int(cached.st_size) {
                    setUp = (folder, secret, a, cached, keep, written)
                    break
                }
                usleep(1_000)
            }
        }
        let (folder, secret, a, cached, keep, written) = try #require(setUp, "B's file never had A's size")
        // B's bytes into inode I, in place; A's mtime back; inode I back at the path.
        let descriptor = open(keep, O_WRONLY)
        #expect(written.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) } == written.count)
        var times = [cached.st_atim, cached.st_mtim]
        #expect(futimens(descriptor, &times) == 0)
        close(descriptor)
        #expect(rename(keep, folder.keychain) == 0)
        var now = stat()
        stat(folder.keychain, &now)
        #expect(
            now.st_ino == cached.st_ino && now.st_size == cached.st_size
                && now.st_mtim.tv_nsec == cached.st_mtim.tv_nsec)
        try a.add(.password(service: "s", account: "y"), data: SecretBytes([3]))
        let reader = try FileKeychain.open(path: folder.keychain, secret: secret, rollbackGuard: nil)
        #expect(
            try reader.copyData(.password(service: "s", account: "x")) == SecretBytes([2]),
            "A's write dropped B's update")
        #expect(try reader.copyData(.password(service: "s", account: "y")) == SecretBytes([3]))
    }

    /// A forged file declaring many slots is refused before any KDF runs;
    /// a legitimate one runs the KDF once.
    @Test func F11_slotCountIsCappedBeforeAnyKDF() throws {
        let folder = try KeychainFolder()
        let secret = UnlockSecret.password(Array("pw".utf8))
        _ = try FileKeychain.create(path: folder.keychain, secret: secret, kdf: Self.fast, rollbackGuard: nil)
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: folder.keychain)))
        let slot = Array(bytes[14..<94])
        bytes[13] = 255
        bytes.insert(contentsOf: Array(repeating: slot, count: 254).flatMap { $0 }, at: 94)
        FileManager.default.createFile(
            atPath: folder.keychain, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
        let counter = WorkCounter()
        WorkCounter.$current.withValue(counter) {
            do {
                _ = try FileKeychain.open(
                    path: folder.keychain, secret: .password(Array("wrong".utf8)), rollbackGuard: nil)
                Issue.record("255 slots were accepted")
            } catch let error as KeychainError {
                #expect(error.code == .corrupted, "\(error)")
            } catch {
                Issue.record("\(error)")
            }
        }
        #expect(counter.count(.kdf) == 0)
    }

    /// publicKey, exportPrivateKey and getOrCreateKey are requirements:
    /// through `any Keychain` the backend's own implementation runs.
    @Test func keyOperationsDispatchThroughAnyKeychain() throws {
        let spy = SpyKeychain()
        let keychain: any Keychain = spy
        _ = try keychain.generateKey(.p256, tag: "t", label: nil)
        _ = try keychain.publicKey(tag: "t", type: .p256)
        _ = try keychain.exportPrivateKey(tag: "t", type: .p256)
        _ = try keychain.getOrCreateKey(.p256, tag: "t", label: nil)
        _ = try keychain.getOrCreateKey(.p256, tag: "t")
        #expect(spy.calls == ["publicKey", "exportPrivateKey", "getOrCreateKey", "getOrCreateKey"])
    }
}

extension TrustDefectKeychainTests {
    /// `keychain list` (through `allItems`) on a locked keychain is an
    /// error, not an empty list: only `itemNotFound` means "none".
    @Test func listingALockedKeychainFails() throws {
        let locked = FailingKeychain(error: KeychainError(.interactionNotAllowed, "the collection is locked"))
        #expect(throws: KeychainError(.interactionNotAllowed, "")) { _ = try locked.allItems() }
        let empty = FailingKeychain(error: KeychainError(.itemNotFound, "none"))
        #expect(try empty.allItems().isEmpty)
    }
}

/// A keychain whose searches all fail with one error.
struct FailingKeychain: Keychain {
    let error: KeychainError
    func add(_ item: KeychainItem, data: SecretBytes) throws { throw error }
    func copyMatching(_ query: KeychainQuery) throws -> [KeychainItem] { throw error }
    func copyData(_ query: KeychainQuery) throws -> SecretBytes { throw error }
    func update(_ query: KeychainQuery, with changes: KeychainChanges) throws { throw error }
    func delete(_ query: KeychainQuery) throws { throw error }
}

/// Records which key operations reached it, then does the default work.
final class SpyKeychain: Keychain, @unchecked Sendable {
    private let inner = InMemoryKeychain()
    private let lock = NSLock()
    private var recorded: [String] = []
    var calls: [String] { lock.withLock { recorded } }
    private func record(_ name: String) { lock.withLock { recorded.append(name) } }

    func add(_ item: KeychainItem, data: SecretBytes) throws { try inner.add(item, data: data) }
    func copyMatching(_ query: KeychainQuery) throws -> [KeychainItem] { try inner.copyMatching(query) }
    func copyData(_ query: KeychainQuery) throws -> SecretBytes { try inner.copyData(query) }
    func update(_ query: KeychainQuery, with changes: KeychainChanges) throws { try inner.update(query, with: changes) }
    func delete(_ query: KeychainQuery) throws { try inner.delete(query) }

    func publicKey(tag: String, type: KeychainKeyType) throws -> AsymmetricPublicKey {
        record("publicKey")
        return try inner.publicKey(tag: tag, type: type)
    }
    func exportPrivateKey(tag: String, type: KeychainKeyType) throws -> AsymmetricPrivateKey {
        record("exportPrivateKey")
        return try inner.exportPrivateKey(tag: tag, type: type)
    }
    func getOrCreateKey(_ type: KeychainKeyType, tag: String, label: String?) throws -> AsymmetricPublicKey? {
        record("getOrCreateKey")
        return try inner.getOrCreateKey(type, tag: tag, label: label)
    }
}

/// F7 for CofferKeychain's secret holders.
@Suite struct KeychainSecretDumpTests {
    @Test func F7_keychainSecretHoldersAreRedacted() throws {
        let passphrase = Array("keychain-passphrase-bytes".utf8)
        let folder = try KeychainFolder()
        let fileKeychain = try FileKeychain.create(
            path: folder.keychain, secret: .password(passphrase),
            kdf: .scrypt(logN: 10, r: 8, p: 1), rollbackGuard: nil)
        let stored = Array("stored-secret-value".utf8)
        try fileKeychain.add(.password(service: "s", account: "a"), data: SecretBytes(stored))
        _ = try fileKeychain.copyMatching(.password())
        let memory = InMemoryKeychain()
        try memory.add(.password(service: "s", account: "a"), data: SecretBytes(stored))
        let key = SymmetricKey(size: .bits256)
        for value in [
            fileKeychain, memory, UnlockSecret.password(passphrase), UnlockSecret.key(key),
            SecretBytes(stored),
        ] as [Any] {
            var dumped = ""
            dump(value, to: &dumped)
            for text in [String(describing: value), String(reflecting: value), "\(value)", dumped] {
                #expect(
                    !text.contains(String(decoding: passphrase, as: UTF8.self))
                        && !text.contains(String(decoding: stored, as: UTF8.self)), "\(text)")
                #expect(!text.contains(stored.map(String.init).joined(separator: ", ")), "\(text)")
                #expect(!text.contains(passphrase.map(String.init).joined(separator: ", ")), "\(text)")
            }
            #expect(Mirror(reflecting: value).children.allSatisfy { $0.label == "count" }, "\(type(of: value))")
        }
    }
}

/// age identities kept in a keychain, through the library (issue 12: the
/// convention lives in CofferKeychain, not the CLI).
@Suite struct AgeIdentityKeychainTests {
    @Test func identitiesRoundTripAndJunkIsRefused() throws {
        let keychain = InMemoryKeychain()
        let identity = X25519.Identity()
        try keychain.addAgeIdentity(identity.exportSecretKey(), label: "laptop")
        let sealed = try Age.encrypt(Array("hello".utf8), to: [identity.recipient])
        #expect(try Age.decrypt(sealed, with: keychain.ageIdentities(label: "laptop")) == Data("hello".utf8))
        #expect(try keychain.ageIdentityLabels() == ["laptop"])
        #expect(throws: CofferError(.malformed, "")) {
            try keychain.addAgeIdentity(SecretBytes(Array("junk\n".utf8)), label: "junk")
        }
        #expect(throws: KeychainError(.duplicateItem, "")) {
            try keychain.addAgeIdentity(identity.exportSecretKey(), label: "laptop")
        }
        #expect(throws: KeychainError(.itemNotFound, "")) { _ = try keychain.ageIdentities(label: "desk") }
        #expect(try InMemoryKeychain().ageIdentityLabels().isEmpty)
    }
}
