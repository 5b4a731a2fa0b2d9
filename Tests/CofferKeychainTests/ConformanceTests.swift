import Coffer
import CofferKeychain
import CofferTesting
import Crypto
import Foundation
import Testing

@Suite struct ConformanceTests {
    @Test func inMemory() throws {
        try KeychainConformance.run { InMemoryKeychain() }
    }
}

/// A private folder for FileKeychain tests.
final class KeychainFolder {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "coffer-keychain-\(UUID().uuidString)"
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    var keychain: String { path + "/test.keychain" }
}

extension ConformanceTests {
    @Test func fileWithKeyFile() throws {
        let folder = try KeychainFolder()
        var index = 0
        try KeychainConformance.run {
            index += 1
            return try FileKeychain.create(
                path: folder.path + "/k\(index).keychain", secret: .key(SymmetricKey(size: .bits256)))
        }
    }

    @Test func fileWithPassphrase() throws {
        let folder = try KeychainFolder()
        var index = 0
        try KeychainConformance.run {
            index += 1
            return try FileKeychain.create(
                path: folder.path + "/p\(index).keychain", secret: .password(Array("pass \(index)".utf8)),
                kdf: .scrypt(logN: 10, r: 8, p: 1))
        }
    }
}

#if canImport(Security)
extension ConformanceTests {
    /// On a Mac, `swift test` runs unsigned, without the keychain-access-groups
    /// entitlement the data protection keychain needs: the suite runs on the
    /// file-based login keychain (access groups folded into the stored names),
    /// each run in a namespace of its own that is deleted afterwards.
    @Test func appleKeychain() throws {
        let namespace = "coffer-conformance-\(UUID().uuidString)"
        var made: [AppleKeychain] = []
        defer {
            for keychain in made {
                for itemClass in ItemClass.allCases { try? keychain.delete(KeychainQuery(itemClass: itemClass)) }
            }
        }
        try KeychainConformance.run {
            let keychain = AppleKeychain(useDataProtectionKeychain: false, namespace: "\(namespace)-\(made.count)")
            made.append(keychain)
            return keychain
        }
    }
}
#endif
