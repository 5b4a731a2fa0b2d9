import Coffer

// CofferCompat's secret holders print and dump as `Type(<redacted>)`.
extension RNCryptor.Credentials: SecretRedacting {}
extension LegacyRecipe.UnauthenticatedPlaintext: SecretRedacting {}
extension AppleKey.RSAKey.Private: SecretRedacting {}
extension AppleKey: CustomDebugStringConvertible, CustomReflectable {
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: KeyValuePairs<String, Any>(), displayStyle: .enum) }
}
