import Coffer
import Crypto
import Foundation

/// Where a table's tenants' keys are wrapped (docs/store.md, "Tenants").
public enum TenantKeyPlace: String, Codable, Sendable {
    /// Under the store's own key ring, in the database: a shred erases the
    /// live database, not a backup of it, which carries both the wrapped
    /// keys and the ring that opens them.
    case store
    /// Also under a key of each tenant's own that a holder outside the
    /// database keeps (``TenantKeyHolder``: coffer-server, a keychain):
    /// once the holder destroys it, no backup of the database opens that
    /// tenant's cells either.
    case holder
}

/// One version of a tenant's key as its holder gives it.
public struct HeldTenantKey: Sendable, CustomStringConvertible {
    /// From 1; names the key a tenant's keys were wrapped under.
    public let version: UInt32
    /// The 256-bit key; hidden from `description`.
    public let key: SymmetricKey

    public init(version: UInt32, key: SymmetricKey) throws {
        guard version >= 1, key.bitCount == 256 else {
            throw CofferError(.invalidArgument, "a held tenant key is 32 bytes with a version from 1")
        }
        self.version = version
        self.key = key
    }

    public var description: String { "HeldTenantKey(version \(version), <redacted>)" }
}

/// Keeps a key per tenant outside the store's database, for a table whose
/// keys are held (``TenantKeyPlace/holder``): the store wraps each tenant's
/// data keys and index root under that tenant's held key (and that again
/// under its own ring), so destroying the held key — at coffer-server, in
/// a keychain — leaves the tenant's cells unopenable in the live database
/// and in every backup of it.
///
/// The store asks for a tenant's key when it opens that tenant's keys and
/// keeps them at most ``RecordStore/heldTenantKeyLifetime`` seconds; a
/// tenant is named by its value as text (an integer in decimal).
/// ``KeyServerTenantKeyHolder`` and ``KeychainTenantKeyHolder`` are the two
/// this package has.
public protocol TenantKeyHolder: Sendable {
    /// Where the keys are, as messages name it (never a secret).
    var location: String { get }
    /// The tenant's current key, made at its first use.
    func currentKey(tenant: String) throws -> HeldTenantKey
    /// Version `version` of the tenant's key: `keyNotFound` once the holder
    /// has destroyed it.
    func key(tenant: String, version: UInt32) throws -> HeldTenantKey
    /// Destroys every version of the tenant's key, for good.
    func destroy(tenant: String) throws
}
