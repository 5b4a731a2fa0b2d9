import Coffer
import Crypto
import Foundation

extension UnlockSecret {
    /// The 256-bit key-encryption key kept in `keychain` as the
    /// `symmetric256` key under `tag`, read each time it is needed (so the
    /// key ring or keychain it unlocks never holds a copy longer than one
    /// unlock). A missing key is `itemNotFound`, naming the tag.
    ///
    /// ```swift
    /// let keychain = try FileKeychain.open(path: path, secret: .password(passphrase))
    /// try keychain.getOrCreateKey(.symmetric256, tag: "com.example.ring-kek")
    /// let store = KeyRingStore(path: "app.ring", secret: .keychainKEK(in: keychain, tag: "com.example.ring-kek"))
    /// ```
    public static func keychainKEK(in keychain: any Keychain, tag: String) -> UnlockSecret {
        .keyProvider(named: "the keychain key \(tag)") {
            do { return try keychain.exportSymmetricKey(tag: tag) } catch let error as KeychainError
                where error.code == .itemNotFound
            {
                throw KeychainError(.itemNotFound, "the keychain holds no symmetric256 key tagged \(tag)")
            }
        }
    }
}
