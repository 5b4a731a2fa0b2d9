import Coffer
import CofferKeyClient
import Foundation

/// coffer-server as the holder of a store's tenants' keys (docs/store.md,
/// "Tenants"): each tenant is a subject of the server's realm, and its
/// key is that subject's key for ``purpose``, released to the store with
/// an operator token of scope `keys:release` (each release in the server's
/// audit chain). Shredding the subject at the server — ``destroy(tenant:)``,
/// which needs `subjects:shred` too, or `coffer server-key shred` — makes
/// the tenant's cells unopenable in every backup of the store's database.
///
/// ```swift
/// let holder = try KeyServerTenantKeyHolder(
///     server: URL(string: "https://keys.example.com")!, operatorToken: token)
/// try store.holdTenantKeys(at: holder)
/// ```
///
/// Each call waits for its request on the calling thread, as
/// ``KeyServerStoreAnchor``'s do.
public struct KeyServerTenantKeyHolder: TenantKeyHolder {
    let admin: KeyServerAdmin
    /// The purpose the tenants' keys have at the server.
    public let purpose: String
    public let location: String

    /// The default purpose: `coffer-store-tenant`.
    public static let defaultPurpose = "coffer-store-tenant"

    public init(
        server: URL, operatorToken: String, purpose: String = KeyServerTenantKeyHolder.defaultPurpose,
        transport: any KeyServerTransport = URLSessionTransport(), timeout: Duration = .seconds(15)
    ) throws {
        admin = try KeyServerAdmin(server: server, operatorToken: operatorToken, transport: transport, timeout: timeout)
        self.purpose = purpose
        location = "the key server at \(server.absoluteString)"
    }

    public func currentKey(tenant: String) throws -> HeldTenantKey {
        try fetch(tenant: tenant, version: nil)
    }

    public func key(tenant: String, version: UInt32) throws -> HeldTenantKey {
        try fetch(tenant: tenant, version: version)
    }

    func fetch(tenant: String, version: UInt32?) throws -> HeldTenantKey {
        let (admin, purpose) = (admin, purpose)
        do {
            let key = try KeyServerStoreAnchor.wait {
                try await admin.serviceKey(subject: tenant, purpose: purpose, version: version.map(Int.init))
            }
            guard let number = UInt32(exactly: key.version) else {
                throw CofferError(.malformed, "\(location) answered a key version past 2^32")
            }
            return try HeldTenantKey(version: number, key: key.key)
        } catch let error as KeyClientError where error.status == 410 || error.code == .init("key-not-found") {
            throw CofferError(
                .keyNotFound, "\(location) no longer holds this tenant's key (\(error.code.name)): it was shredded")
        } catch let error as KeyClientError {
            throw CofferError(.keyHolderUnavailable, "\(location) did not give the tenant's key: \(error)")
        }
    }

    public func destroy(tenant: String) throws {
        let admin = admin
        do {
            // `create`: a tenant that never wrote has no key there yet, and
            // its shred must still keep one from ever being made.
            _ = try KeyServerStoreAnchor.wait { try await admin.shred(subject: tenant, undoWindow: 0, create: true) }
        } catch let error as KeyClientError where error.status == 410 {
            return  // destroyed already
        } catch let error as KeyClientError {
            throw CofferError(
                .keyHolderUnavailable,
                "\(location) did not shred the tenant (it needs an operator token with subjects:shred): \(error)")
        }
    }
}
