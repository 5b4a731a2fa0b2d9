import Coffer
import CofferKeychain
import Crypto
import Foundation

/// A keychain as the holder of a store's tenants' keys (docs/store.md,
/// "Tenants"): one generic-password item per tenant (``service``, the
/// tenant as account, `0x01 ‖ version (4) ‖ key (32)` as data), made at
/// the tenant's first write. Kept apart from the database's backups — the
/// device's keychain, GNOME Keyring, Coffer's file keychain on another
/// volume — a ``destroy(tenant:)`` (which the store's shred calls) reaches
/// every backup of the database. A keychain keeps one version per tenant.
public struct KeychainTenantKeyHolder: TenantKeyHolder {
    public let keychain: any Keychain
    public let service: String
    public let accessibility: Accessibility

    public static let defaultService = "org.coffer.store-tenant-key"

    public init(
        keychain: any Keychain, service: String = KeychainTenantKeyHolder.defaultService,
        accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly
    ) {
        self.keychain = keychain
        self.service = service
        self.accessibility = accessibility
    }

    public var location: String { "the keychain (\(service))" }

    func read(_ tenant: String) throws -> HeldTenantKey? {
        let bytes: [UInt8]
        do {
            bytes = try keychain.copyData(.password(service: service, account: tenant)).revealed()
        } catch let error as KeychainError where error.code == .itemNotFound {
            return nil
        }
        guard bytes.count == 37, bytes[0] == 1 else {
            throw CofferError(.malformed, "\(location) holds an item for this tenant that is not a tenant key")
        }
        let version = bytes[1..<5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return try HeldTenantKey(version: version, key: SymmetricKey(data: bytes[5...]))
    }

    public func currentKey(tenant: String) throws -> HeldTenantKey {
        if let held = try read(tenant) { return held }
        let key = SymmetricKey(size: .bits256)
        var bytes: [UInt8] = [1, 0, 0, 0, 1]
        key.withUnsafeBytes { bytes += $0 }
        do {
            try keychain.add(
                .password(
                    service: service, account: tenant, label: "Coffer store tenant key", accessibility: accessibility),
                data: SecretBytes(bytes))
        } catch let error as KeychainError where error.code == .duplicateItem {
            // Another process made it first: theirs is the tenant's key.
        }
        bytes.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
        guard let held = try read(tenant) else {
            throw CofferError(.keyHolderUnavailable, "\(location) did not keep the tenant's new key")
        }
        return held
    }

    public func key(tenant: String, version: UInt32) throws -> HeldTenantKey {
        guard let held = try read(tenant), held.version == version else {
            throw CofferError(.keyNotFound, "\(location) no longer holds this tenant's key: it was destroyed")
        }
        return held
    }

    public func destroy(tenant: String) throws {
        do {
            try keychain.delete(.password(service: service, account: tenant))
        } catch let error as KeychainError where error.code == .itemNotFound {}
    }
}
