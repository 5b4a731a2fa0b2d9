import Coffer
import Foundation
import Testing

@testable import CofferCompat

/// The formats as an open list: each named once, each reading what its own
/// API wrote, refusing a value that was changed, and saying what it lacks.
@Suite struct CompatFormatTests {
    @Test func everyFormatIsNamedOnceAndFound() throws {
        let names = CompatFormat.all.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(
            names == [
                "apple-ecies", "rncryptor", "legacy-cbc", "legacy-ecb", "cryptokit-aesgcm", "cryptokit-chachapoly",
                "aerogear-cbc", "aerogear-secretbox",
            ])
        #expect(try CompatFormat.named("rncryptor").needs == .passwordOrKey)
        let error = #expect(throws: CofferError.self) { _ = try CompatFormat.named("rot13") }
        #expect(error?.description.contains("cryptokit-aesgcm") == true)
        #expect(
            CompatFormat.all.filter { !$0.authenticated }.map(\.name) == ["legacy-cbc", "legacy-ecb", "aerogear-cbc"])
    }

    @Test func aFormatReadsWhatItsAPIWroteAndNothingChanged() throws {
        let key = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let sealed = try CryptoKitBox.seal(Array("a present".utf8), key: key, cipher: .chachapoly)
        let format = try CompatFormat.named("cryptokit-chachapoly")
        var given = CompatFormat.Credentials()
        #expect(throws: CofferError.self) { _ = try format.read(sealed, with: given) }
        given.key = key
        #expect(try format.read(sealed, with: given) == Data("a present".utf8))
        var changed = Array(sealed)
        changed[changed.count - 1] ^= 1
        #expect(throws: CofferError.self) { _ = try format.read(changed, with: given) }

        let message = try RNCryptor.encrypt(Data("notes".utf8), credentials: .password(Array("pw".utf8)))
        var password = CompatFormat.Credentials()
        password.password = Array("pw".utf8)
        #expect(try CompatFormat.named("rncryptor").read(message, with: password) == Data("notes".utf8))
    }

    @Test func anAppAddsAFormatOfItsOwn() throws {
        let reversed = CompatFormat(
            name: "reversed", summary: "bytes backwards", needs: .password, authenticated: false
        ) {
            stored, _ in Data(stored.reversed())
        }
        let formats = CompatFormat.all + [reversed]
        #expect(try CompatFormat.named("reversed", in: formats).read([1, 2, 3], with: .init()) == Data([3, 2, 1]))
    }
}
