import Crypto
import Foundation

/// What unlocks a key ring, a file keychain or anything else protected by
/// ``KeySlot``s: a password, a 32-byte key-encryption key (KEK), or a KEK
/// fetched only when it is needed (from a keychain, a key server).
///
/// Never printed: `description` and `dump` show only the kind.
///
/// ```swift
/// let fromPrompt = UnlockSecret.password(SecretBytes(Array("correct horse".utf8)))
/// let fromFile = UnlockSecret.key(try SymmetricKey(kekFileContents))
/// let fromKeychain = UnlockSecret.keychainKEK(in: keychain, tag: "com.example.kek")  // CofferKeychain
/// ```
public struct UnlockSecret: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// What a secret turns out to be once fetched.
    package enum Material: Sendable {
        case password(SecretBytes)
        case key(SymmetricKey)
        case wrapper(KeyWrapper)
    }
    private enum Source: Sendable {
        case material(Material)
        /// Fetched at each use, so a KEK held elsewhere is not copied into
        /// a long-lived object.
        case provider(name: String, fetch: @Sendable () throws -> SymmetricKey)
    }
    private let source: Source

    /// A password or passphrase (its bytes as given; Coffer does not
    /// normalise them). Must not be empty.
    public static func password(_ password: SecretBytes) -> UnlockSecret {
        UnlockSecret(source: .material(.password(password)))
    }
    /// A password or passphrase, as bytes.
    public static func password(_ password: [UInt8]) -> UnlockSecret { .password(SecretBytes(password)) }
    /// A 256-bit key-encryption key.
    public static func key(_ key: SymmetricKey) -> UnlockSecret { UnlockSecret(source: .material(.key(key))) }
    /// A 256-bit key-encryption key fetched by `fetch` each time it is
    /// needed; `name` says where it lives in errors and descriptions (never
    /// the key). CofferKeychain's `keychainKEK(in:tag:)` is one.
    public static func keyProvider(named name: String, _ fetch: @escaping @Sendable () throws -> SymmetricKey)
        -> UnlockSecret
    {
        UnlockSecret(source: .provider(name: name, fetch: fetch))
    }

    /// A key-encryption key that never leaves where it is held (an HSM:
    /// CofferPKCS11's `UnlockSecret.pkcs11(_:)`). Slots for it are kind 3
    /// (docs/key-slots.md): `seal` is given a 32-byte data key and the
    /// slot's associated data and returns AES-256-GCM's nonce (12 bytes),
    /// ciphertext (32) and tag (16), with a nonce of its own choosing; `open`
    /// reverses it, and throws `wrongPassword` when the tag does not verify.
    public static func keyWrapper(
        named name: String, seal: @escaping @Sendable (_ dataKey: [UInt8], _ associatedData: [UInt8]) throws -> [UInt8],
        open: @escaping @Sendable (_ sealed: [UInt8], _ associatedData: [UInt8]) throws -> [UInt8]
    ) -> UnlockSecret {
        UnlockSecret(source: .material(.wrapper(KeyWrapper(name: name, seal: seal, open: open))))
    }

    /// True for a password (which a password KDF stretches), false for a key.
    public var isPassword: Bool {
        if case .material(.password) = source { return true }
        return false
    }

    /// The password or key, fetched now, with a key's length checked.
    package func material() throws -> Material {
        switch source {
        case .material(.password(let password)):
            guard password.count > 0 else { throw CofferError(.invalidArgument, "the password is empty") }
            return .password(password)
        case .material(.key(let key)):
            guard key.bitCount == 256 else {
                throw CofferError(.invalidArgument, "a key-encryption key is 32 bytes, not \(key.bitCount / 8)")
            }
            return .key(key)
        case .provider(let name, let fetch):
            let key: SymmetricKey
            do { key = try fetch() } catch let error as CofferError {
                throw error.prefixed("cannot fetch the key-encryption key from \(name)")
            }
            guard key.bitCount == 256 else {
                throw CofferError(
                    .invalidArgument, "the key-encryption key from \(name) is \(key.bitCount / 8) bytes, not 32")
            }
            return .key(key)
        case .material(.wrapper(let wrapper)):
            return .wrapper(wrapper)
        }
    }

    public var description: String {
        switch source {
        case .material(.password): "UnlockSecret.password(<redacted>)"
        case .material(.key): "UnlockSecret.key(<redacted>)"
        case .provider(let name, _): "UnlockSecret.keyProvider(\(name), <redacted>)"
        case .material(.wrapper(let wrapper)): "UnlockSecret.keyWrapper(\(wrapper.name))"
        }
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// A key held elsewhere that seals and opens key slots where it lives
/// (``UnlockSecret/keyWrapper(named:seal:open:)``).
package struct KeyWrapper: Sendable {
    package let name: String
    package let seal: @Sendable ([UInt8], [UInt8]) throws -> [UInt8]
    package let open: @Sendable ([UInt8], [UInt8]) throws -> [UInt8]
}
