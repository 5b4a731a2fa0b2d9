import Coffer
import CofferKeychain
import Foundation
import Testing

/// The types that will grow are structs with static members; their stored
/// and printed forms are the raw values the enums had, so files written
/// before the change read the same.
@Suite struct OpenTypesTests {
    @Test func keychainItemsStoreTheSameStrings() throws {
        let item = KeychainItem.key(tag: "t", type: .rsa3072, accessibility: .afterFirstUnlockThisDeviceOnly)
        let json = String(decoding: try JSONEncoder().encode(item), as: UTF8.self)
        #expect(json.contains("\"keyType\":\"rsa3072\""), "\(json)")
        #expect(json.contains("\"accessibility\":\"afterFirstUnlockThisDeviceOnly\""), "\(json)")
        let back = try JSONDecoder().decode(KeychainItem.self, from: Data(json.utf8))
        #expect(back == item)
        let unknown = json.replacingOccurrences(of: "rsa3072", with: "rsa1024")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(KeychainItem.self, from: Data(unknown.utf8)) }
    }

    @Test func everyMemberParsesFromItsRawValue() {
        #expect(
            KeychainKeyType.allCases.map(\.rawValue) == [
                "p256", "x25519", "rsa2048", "rsa3072", "rsa4096", "symmetric256",
            ])
        for type in KeychainKeyType.allCases { #expect(KeychainKeyType(rawValue: type.description) == type) }
        for value in Accessibility.allCases { #expect(Accessibility(rawValue: value.rawValue) == value) }
        #expect(
            KeyAgreement.KDF.allCases.map(\.rawValue) == [
                "x963-sha256", "x963-sha1", "x963-sha384", "x963-sha512", "hkdf-sha256",
            ])
        #expect(RSAEncryption.Hash(rawValue: "sha1") == .sha1)
        #expect(RSAEncryption.Hash(rawValue: "sha3-256") == nil)
        #expect(KeychainKeyType(rawValue: "P256") == nil)
    }
}
