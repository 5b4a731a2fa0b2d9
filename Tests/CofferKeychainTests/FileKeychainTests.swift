import Coffer
import CofferKeychain
import Crypto
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Hostile conditions for FileKeychain: each gives a clear error and
/// leaves the previous contents intact.
@Suite struct FileKeychainTests {
    static let fast = PasswordKDF.scrypt(logN: 10, r: 8, p: 1)
    let password = UnlockSecret.password(Array("correct password".utf8))

    func makeKeychain(_ folder: KeychainFolder) throws -> FileKeychain {
        let keychain = try FileKeychain.create(path: folder.keychain, secret: password, kdf: Self.fast)
        try keychain.add(.password(service: "svc", account: "me"), data: SecretBytes(Array("s3cret".utf8)))
        return keychain
    }

    func expectCode(
        _ code: KeychainError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) {
        do {
            try body()
            Issue.record("expected \(code), nothing thrown", sourceLocation: sourceLocation)
        } catch let error as KeychainError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
        }
    }

    /// A KeychainError says where in Coffer it was raised, so that a bug
    /// report carries it; equality still compares codes only.
    @Test func errorsRecordTheirCallSite() throws {
        let folder = try KeychainFolder()
        let keychain = try makeKeychain(folder)
        do {
            _ = try keychain.copyData(.password(service: "svc", account: "nobody"))
            Issue.record("a missing item was found")
        } catch let error as KeychainError {
            #expect(error.code == .itemNotFound)
            #expect(error.file.hasPrefix("CofferKeychain/"), "raised at \(error.file):\(error.line)")
            #expect(error.line > 0)
            #expect(error == KeychainError(.itemNotFound, "another reason"))
        }
    }

    @Test func wrongSecretAndPasswordChange() throws {
        let folder = try KeychainFolder()
        let keychain = try makeKeychain(folder)
        expectCode(.authenticationFailed) {
            _ = try FileKeychain.open(path: folder.keychain, secret: .password(Array("wrong".utf8)))
        }
        expectCode(.authenticationFailed) {
            _ = try FileKeychain.open(path: folder.keychain, secret: .key(SymmetricKey(size: .bits256)))
        }
        let before = try keychain.generation()
        let changed = try keychain.changeSecret(to: .password(Array("new password".utf8)), kdf: Self.fast)
        #expect(try changed.copyData(.password(service: "svc", account: "me")) == SecretBytes(Array("s3cret".utf8)))
        #expect(try changed.generation() == before + 1)
        expectCode(.authenticationFailed) { _ = try FileKeychain.open(path: folder.keychain, secret: self.password) }
    }

    /// Every single-byte change, truncations and appended bytes: a clear
    /// error each time, and the original file still opens afterwards.
    @Test func damagedFilesAreRefused() throws {
        let folder = try KeychainFolder()
        _ = try makeKeychain(folder)
        let original = Array(try Data(contentsOf: URL(fileURLWithPath: folder.keychain)))
        let key = try FileKeychain.open(path: folder.keychain, secret: password)
        _ = key
        var codes: [String: Int] = [:]
        func attempt(_ bytes: [UInt8]) {
            FileManager.default.createFile(
                atPath: folder.keychain, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
            do {
                let opened = try FileKeychain.open(path: folder.keychain, secret: password)
                _ = try opened.copyMatching(.password())
                Issue.record("a damaged keychain opened")
            } catch let error as KeychainError {
                codes[error.code.name, default: 0] += 1
            } catch {
                Issue.record("not a KeychainError: \(error)")
            }
        }
        for position in 0..<original.count {
            var damaged = original
            damaged[position] ^= 0x41
            attempt(damaged)
        }
        for length in stride(from: 0, to: original.count, by: 7) { attempt(Array(original.prefix(length))) }
        attempt(original + [0])
        attempt(original + Array(repeating: 0xff, count: 1000))
        print("keychain byte flips and truncations: \(codes)")
        #expect(codes.values.reduce(0, +) == original.count + (original.count + 6) / 7 + 2)
        FileManager.default.createFile(
            atPath: folder.keychain, contents: Data(original), attributes: [.posixPermissions: 0o600])
        #expect(
            try FileKeychain.open(path: folder.keychain, secret: password).copyData(
                .password(service: "svc", account: "me")) == SecretBytes(Array("s3cret".utf8)))
    }

    /// Forged huge scrypt parameters are refused before any work.
    @Test func forgedParametersAreRefusedAtOnce() throws {
        let folder = try KeychainFolder()
        _ = try makeKeychain(folder)
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: folder.keychain)))
        bytes[15] = 40  // the first slot's log2 N
        FileManager.default.createFile(
            atPath: folder.keychain, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
        let start = Date()
        expectCode(.corrupted) { _ = try FileKeychain.open(path: folder.keychain, secret: self.password) }
        #expect(Date().timeIntervalSince(start) < 1)
    }

    @Test func permissionsAndSymlinks() throws {
        let folder = try KeychainFolder()
        let keychain = try makeKeychain(folder)
        chmod(folder.keychain, 0o644)
        expectCode(.insecurePermissions) { _ = try keychain.copyMatching(.password()) }
        chmod(folder.keychain, 0o600)
        chmod(folder.path, 0o777)
        expectCode(.insecurePermissions) { _ = try keychain.copyMatching(.password()) }
        expectCode(.insecurePermissions) {
            try keychain.add(.password(service: "x", account: "y"), data: SecretBytes([1]))
        }
        chmod(folder.path, 0o700)
        #expect(try keychain.copyMatching(.password()).count == 1)
        // The keychain file replaced by a symlink to a good copy.
        try FileManager.default.moveItem(atPath: folder.keychain, toPath: folder.path + "/elsewhere")
        symlink(folder.path + "/elsewhere", folder.keychain)
        expectCode(.insecurePermissions) { _ = try keychain.copyMatching(.password()) }
        unlink(folder.keychain)
        try FileManager.default.moveItem(atPath: folder.path + "/elsewhere", toPath: folder.keychain)
        // The lock file replaced by a symlink: writes refuse, the contents stay.
        let lockPath = folder.path + "/.test.keychain.lock"
        unlink(lockPath)
        symlink("/tmp/not-a-lock", lockPath)
        expectCode(.insecurePermissions) {
            try keychain.add(.password(service: "x", account: "y"), data: SecretBytes([1]))
        }
        unlink(lockPath)
        #expect(try keychain.copyMatching(.password()).count == 1)
        // The folder itself a symlink.
        let linked = NSTemporaryDirectory() + "coffer-keychain-link-\(UUID().uuidString)"
        symlink(folder.path, linked)
        defer { unlink(linked) }
        expectCode(.insecurePermissions) {
            _ = try FileKeychain.open(path: linked + "/test.keychain", secret: self.password)
        }
    }

    /// Stale temporary files (a writer killed mid-write) are swept by the next write.
    @Test func staleTemporaryFilesAreSwept() throws {
        let folder = try KeychainFolder()
        let keychain = try makeKeychain(folder)
        FileManager.default.createFile(
            atPath: folder.path + "/.test.keychain.coffer-deadbeef0123", contents: Data([1, 2, 3]))
        // Provably stale: nobody holds its lock and it was last written a minute ago.
        var old = [timespec(tv_sec: time(nil) - 60, tv_nsec: 0), timespec(tv_sec: time(nil) - 60, tv_nsec: 0)]
        utimensat(AT_FDCWD, folder.path + "/.test.keychain.coffer-deadbeef0123", &old, 0)
        try keychain.add(.password(service: "another", account: "one"), data: SecretBytes([4]))
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".coffer-") }
        #expect(left.isEmpty)
    }
}
