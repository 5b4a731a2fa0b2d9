import Coffer

// CofferKeychain's secret holders print and dump without their secrets.
extension FileKeychain: SecretRedacting {
    public var description: String { "FileKeychain(\(path), secret: <redacted>)" }
}
extension InMemoryKeychain: SecretRedacting {}
extension ItemStore: SecretRedacting {}
