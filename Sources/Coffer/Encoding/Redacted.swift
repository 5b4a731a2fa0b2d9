/// A type that holds secret bytes (a key, a passphrase, plaintext) and
/// never shows them: `description`, `debugDescription`, string
/// interpolation, `print`, `dump` and `Mirror` all see only
/// `TypeName(<redacted>)`. A type may still give its own `description`
/// with public parts (a key ring's key count); its `customMirror` stays
/// empty unless it lists only public values.
///
/// Every secret-holding type of Coffer, CofferCompat and CofferKeychain
/// conforms; the hygiene tests dump each one and look for its secret.
public protocol SecretRedacting: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {}

extension SecretRedacting {
    public var description: String { Self.redactedName + "(<redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: KeyValuePairs<String, Any>(), displayStyle: .struct) }

    /// The type's name without its module: `X25519.Identity`.
    static var redactedName: String {
        let full = String(reflecting: Self.self)
        guard let dot = full.firstIndex(of: ".") else { return full }
        return String(full[full.index(after: dot)...])
    }
}

// Coffer's secret holders. Types with their own `description` keep it
// (it shows only public parts); all get an empty mirror.
extension FileKey: SecretRedacting {}
extension X25519.Identity: SecretRedacting {}
extension MLKEM768X25519.Identity: SecretRedacting {}
extension P256Tag.Identity: SecretRedacting {}
extension MLKEM768P256Tag.Identity: SecretRedacting {}
extension SSHEd25519.Identity: SecretRedacting {}
extension SSHRSA.Identity: SecretRedacting {}
extension Scrypt.Recipient: SecretRedacting {}
extension Scrypt.Identity: SecretRedacting {}
extension AsymmetricPrivateKey: SecretRedacting {}
extension AgeRandomAccessFile: SecretRedacting {}
extension RSAEncryption.Decryptor: SecretRedacting {}
extension KeyAgreement.Party: SecretRedacting {}
extension KeyRingStore: SecretRedacting {
    public var description: String { "KeyRingStore(\(path), secret: <redacted>)" }
}
