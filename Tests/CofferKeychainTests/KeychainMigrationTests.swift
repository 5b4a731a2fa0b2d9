import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import Coffer
@testable import CofferKeychain

/// Version 1 file keychains (as every release before key slots wrote
/// them) open, and the next write makes them version 2 without a second
/// KDF run; the old passphrase or key file still opens them.
@Suite struct KeychainMigrationTests {
    static let fast = PasswordKDF.scrypt(logN: 10, r: 8, p: 1)

    /// A version 1 keychain holding one password item, built byte by byte
    /// from the version 1 description (FileKeychain+Format.swift).
    static func versionOne(secret: UnlockSecret) throws -> [UInt8] {
        let dataKey = SymmetricKey(size: .bits256)
        let salt = [UInt8](repeating: 0x5A, count: 16)
        let kind: UInt8
        let parameters: [UInt8]
        let slotKey: SymmetricKey
        switch try secret.material() {
        case .password(let password):
            (kind, parameters) = (1, [10, 8, 1])
            slotKey = try fast.derive(password: password.revealed(), salt: salt)
        case .key(let key):
            (kind, parameters) = (0, [0, 0, 0])
            slotKey = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: key, salt: salt, info: Array("coffer keychain v1 key file slot".utf8),
                outputByteCount: 32)
        case .wrapper:
            throw CofferError(.invalidArgument, "version 1 keychains had no slots for keys held elsewhere")
        }
        let wrapped = try dataKey.withUnsafeBytes {
            try AES.GCM._SIV.seal(
                Array($0), using: slotKey, nonce: AES.GCM._SIV.Nonce(),
                authenticating: Array("CKC1 slot".utf8) + [kind] + parameters + salt)
        }
        let header =
            Array("CKC1".utf8) + [1] + [0, 0, 0, 0, 0, 0, 0, 3] + [1] + [kind] + parameters + salt
            + Array(wrapped.combined)
        var store = ItemStore()
        try store.add(.password(service: "old", account: "item"), data: SecretBytes(Array("kept".utf8)))
        let body = try AES.GCM._SIV.seal(
            try JSONEncoder().encode(store), using: dataKey, nonce: AES.GCM._SIV.Nonce(), authenticating: header)
        return header + Array(body.combined)
    }

    @Test(arguments: [true, false])
    func versionOneOpensAndMigratesOnWrite(password: Bool) throws {
        let folder = try KeychainFolder()
        let secret: UnlockSecret =
            password ? .password(Array("old passphrase".utf8)) : .key(SymmetricKey(size: .bits256))
        try Data(try Self.versionOne(secret: secret)).write(to: URL(fileURLWithPath: folder.keychain))
        chmod(folder.keychain, 0o600)
        let guardFile = StateFileRollbackGuard(path: folder.path + "/state/generations")
        let counter = WorkCounter()
        try WorkCounter.$current.withValue(counter) {
            let keychain = try FileKeychain.open(path: folder.keychain, secret: secret, rollbackGuard: guardFile)
            #expect(
                try keychain.copyData(.password(service: "old", account: "item")) == SecretBytes(Array("kept".utf8)))
            try keychain.add(.password(service: "new", account: "item"), data: SecretBytes([1]))
        }
        #expect(counter.count(.kdf) == (password ? 1 : 0))
        let written = Array(try Data(contentsOf: URL(fileURLWithPath: folder.keychain)))
        #expect(Array(written.prefix(5)) == Array("CKC1".utf8) + [2])
        #expect(Array(written[5..<13]) == [0, 0, 0, 0, 0, 0, 0, 4])
        let reopened = try FileKeychain.open(path: folder.keychain, secret: secret, rollbackGuard: guardFile)
        #expect(try reopened.copyMatching(.password()).count == 2)
        let wrong: UnlockSecret = password ? .password(Array("not it".utf8)) : .key(SymmetricKey(size: .bits256))
        #expect(throws: KeychainError(.authenticationFailed, "")) {
            try FileKeychain.open(path: folder.keychain, secret: wrong, rollbackGuard: guardFile)
        }
        let otherKind: UnlockSecret = password ? .key(SymmetricKey(size: .bits256)) : .password(Array("x".utf8))
        #expect(throws: KeychainError(.authenticationFailed, "")) {
            try FileKeychain.open(path: folder.keychain, secret: otherKind, rollbackGuard: guardFile)
        }
    }

    @Test func versionThreeAndDamagedSlotsAreRefused() throws {
        let folder = try KeychainFolder()
        let secret = UnlockSecret.password(Array("pw".utf8))
        _ = try FileKeychain.create(path: folder.keychain, secret: secret, kdf: Self.fast, rollbackGuard: nil)
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: folder.keychain)))
        bytes[4] = 3
        try Data(bytes).write(to: URL(fileURLWithPath: folder.keychain))
        #expect(throws: KeychainError(.unsupportedVersion, "")) {
            try FileKeychain.open(path: folder.keychain, secret: secret, rollbackGuard: nil)
        }
        bytes[4] = 2
        bytes[14] = 7  // an unknown slot kind
        try Data(bytes).write(to: URL(fileURLWithPath: folder.keychain))
        #expect(throws: KeychainError(.unsupportedVersion, "")) {
            try FileKeychain.open(path: folder.keychain, secret: secret, rollbackGuard: nil)
        }
        bytes[14] = 1
        bytes[15] = 40  // scrypt log2 N = 40: refused before any work
        try Data(bytes).write(to: URL(fileURLWithPath: folder.keychain))
        #expect(throws: KeychainError(.corrupted, "")) {
            try FileKeychain.open(path: folder.keychain, secret: secret, rollbackGuard: nil)
        }
    }
}
