#if canImport(Security)
import Coffer
import Crypto
import Foundation
import Security

/// Apple's own keychain behind the `Keychain` protocol (docs/keychain.md).
///
/// Its logic — where each item lives, how services and tags are named,
/// reading items back, the update rules — is `SecItemKeychain` with
/// `SecItemLayout`, which the tests run on every platform against
/// `FakeSecItems`; here it runs on the Security framework
/// (`SecurityFrameworkItems`: SecItemAdd / SecItemCopyMatching /
/// SecItemUpdate / SecItemDelete).
///
/// - Password items are `kSecClassGenericPassword` items (service, account).
/// - P-256 and RSA keys are `kSecClassKey` private keys (application tag,
///   key type and size); `secureEnclave` makes P-256 keys inside the Secure
///   Enclave (`kSecAttrTokenIDSecureEnclave`, `.privateKeyUsage`), which
///   never leave it: their agreement runs there, and export fails.
/// - X25519 and 256-bit symmetric keys, which SecKey does not hold, are
///   generic passwords of service `coffer.key.x25519` / `coffer.key.symmetric256`
///   with the tag as account, as Apple advises for CryptoKit keys.
/// - `useDataProtectionKeychain` sets `kSecUseDataProtectionKeychain` (the
///   iOS-style keychain on macOS; it needs a signed app with a
///   keychain-access-groups entitlement). Without it, on the file-based
///   macOS keychain that ignores access groups, the access group is kept in
///   the stored service or tag instead, so namespaces still hold.
/// - `namespace`, when set, prefixes every stored service and tag, so that
///   tests (and previews) never touch the user's real items.
public final class AppleKeychain: Keychain, Sendable {
    public let useDataProtectionKeychain: Bool
    public let secureEnclave: Bool
    public let namespace: String?
    let core: SecItemKeychain<SecurityFrameworkItems>
    var layout: SecItemLayout { core.layout }
    var items: SecurityFrameworkItems { core.backend }

    public init(useDataProtectionKeychain: Bool = true, secureEnclave: Bool = false, namespace: String? = nil) {
        self.useDataProtectionKeychain = useDataProtectionKeychain
        self.secureEnclave = secureEnclave
        self.namespace = namespace
        core = SecItemKeychain(
            layout: SecItemLayout(useDataProtectionKeychain: useDataProtectionKeychain, namespace: namespace),
            backend: SecurityFrameworkItems(useDataProtectionKeychain: useDataProtectionKeychain))
    }

    // MARK: Keychain

    public func add(_ item: KeychainItem, data: SecretBytes) throws { try core.add(item, data: data) }
    public func copyMatching(_ query: KeychainQuery) throws -> [KeychainItem] { try core.copyMatching(query) }
    public func copyData(_ query: KeychainQuery) throws -> SecretBytes { try core.copyData(query) }
    public func update(_ query: KeychainQuery, with changes: KeychainChanges) throws {
        try core.update(query, with: changes)
    }
    public func delete(_ query: KeychainQuery) throws { try core.delete(query) }

    /// The SecKey of the one private key `query` names.
    func secKey(_ query: KeychainQuery) throws -> SecKey {
        let record = try core.single(query)
        return try items.secKey(record.reference, base: record.base)
    }
}
#endif
