#if Server
import Coffer
import Crypto
import Foundation
import Hummingbird
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// The hand-written parts of the release path: the response body, the
/// subject's control-character check and the memo of opened keys.
@Suite struct KeyResponseTests {
    static func released(device: String = "", version: Int = 3) throws -> ReleasedKey {
        let name = try KeyName(realm: "main", subject: "ada", device: device, purpose: "notes")
        let key = SymmetricKey(size: .bits256)
        return ReleasedKey(name: name, version: version, keyID: KeyName.keyID(of: key), key: key)
    }

    static func object(_ body: ByteBuffer) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any])
    }

    /// What JSONSerialization reads back is the key, its name and version;
    /// `device` only when there is one; a batch wraps the keys in `keys`.
    @Test func bodiesParseAsTheKeysTheyCarry() throws {
        for device in ["", "phone:A1"] {
            let key = try Self.released(device: device)
            let response = KeyResponse(key, cacheSeconds: 600)
            #expect(KeyResponse.body([response], batch: false).headers[.cacheControl] == "no-store")
            let object = try Self.object(KeyResponse.json([response], batch: false))
            let members: Set<String> = ["cacheSeconds", "key", "keyId", "purpose", "version"]
            #expect(Set(object.keys) == (device.isEmpty ? members : members.union(["device"])))
            #expect(object["cacheSeconds"] as? Int == 600)
            #expect(Data(base64Encoded: try #require(object["key"] as? String)) == key.key.withUnsafeBytes { Data($0) })
            #expect(object["keyId"] as? String == key.keyID)
            #expect(object["purpose"] as? String == "notes")
            #expect(object["version"] as? Int == 3)
            #expect(object["device"] as? String == (device.isEmpty ? nil : device))
        }
        let keys = try [Self.released(version: 1), Self.released(device: "d", version: 2)]
        let batch = try Self.object(KeyResponse.json(keys.map { KeyResponse($0, cacheSeconds: 0) }, batch: true))
        let listed = try #require(batch["keys"] as? [[String: Any]])
        #expect(listed.map { $0["version"] as? Int } == [1, 2])
        #expect(
            listed.map { $0["key"] as? String }
                == keys.map { $0.key.withUnsafeBytes { Data($0).base64EncodedString() } })
    }

    /// Quotes, backslashes and control characters are escaped; the rest
    /// (non-ASCII too) passes as it is.
    @Test func jsonStringsRoundTrip() throws {
        for text in ["plain", "a\"b", "back\\slash", "tab\there", "nul\u{0}", "\u{1F}\u{7F}", "prénom 名前", ""] {
            var buffer = ByteBuffer()
            JSONText.write(text, into: &buffer)
            let wrapped = "[" + String(buffer: buffer) + "]"
            let parsed = try JSONSerialization.jsonObject(with: Data(wrapped.utf8)) as? [String]
            #expect(parsed == [text])
        }
    }

    /// The range check agrees with Unicode's general category on every scalar.
    @Test func controlCharactersAreCategoryCc() {
        let disagreeing = (UInt32(0)...0x10FFFF).compactMap(Unicode.Scalar.init).filter {
            KeyName.isControl($0) != ($0.properties.generalCategory == .control)
        }
        #expect(disagreeing.isEmpty)
        #expect(KeyName.isControl("\u{85}") && !KeyName.isControl("\u{A0}"))
    }

    /// An opened key is found for the same name, version and wrapped bytes
    /// only, and not after its lifetime.
    @Test func openedKeysAreAMemoWithALifetime() throws {
        let memo = OpenedKeys()
        let key = try Self.released()
        let row = StoredVersion(version: 3, wrapped: Data([1, 2, 3]))
        memo.keep(key, row, now: 1000)
        #expect(memo.find(key.name, row, now: 1000)?.keyID == key.keyID)
        #expect(memo.find(key.name, row, now: 1000 + OpenedKeys.lifetime - 1) != nil)
        #expect(memo.find(key.name, StoredVersion(version: 3, wrapped: Data([1, 2, 4])), now: 1000) == nil)
        #expect(memo.find(key.name, StoredVersion(version: 4, wrapped: Data([1, 2, 3])), now: 1000) == nil)
        let other = try KeyName(realm: "main", subject: "bob", purpose: "notes")
        #expect(memo.find(other, row, now: 1000) == nil)
        #expect(memo.find(key.name, row, now: 1000 + OpenedKeys.lifetime) == nil)
        #expect(memo.count == 0)
        for index in 0..<OpenedKeys.capacity + 1 {
            memo.keep(key, StoredVersion(version: index, wrapped: Data()), now: 1000)
        }
        #expect(memo.count == 1)
    }
}
#endif
