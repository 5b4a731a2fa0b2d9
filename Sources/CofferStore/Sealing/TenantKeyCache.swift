import Coffer
import Foundation

/// The tenants' keys this process opened lately, by table and tenant, each
/// with the sealed bytes it was opened from: a lookup reads the tenant's
/// row (so a shred or a rotation by another process is seen at once) and
/// skips only the unsealing. At most ``limit`` are kept, the least
/// recently used dropped first.
final class TenantKeyCache: Sendable {
    struct Name: Hashable, Sendable {
        var table: String
        var tenant: [UInt8]
    }

    /// One tenant's kept keys: a class, so a lookup touches it in place
    /// rather than copying it out and back; changed only under the
    /// cache's lock.
    final class Entry: @unchecked Sendable {
        let sealed: [UInt8]
        let keys: StoreKeys
        var used: UInt64
        /// When a held tenant's keys must be asked of the holder again
        /// (seconds since 1970); nil for keys under the store's ring alone.
        let expires: Double?

        init(sealed: [UInt8], keys: StoreKeys, used: UInt64, expires: Double?) {
            (self.sealed, self.keys, self.used, self.expires) = (sealed, keys, used, expires)
        }
    }

    struct Contents: Sendable {
        var entries: [Name: Entry] = [:]
        var tick: UInt64 = 0
        var limit: Int
        var holder: (any TenantKeyHolder)?
        var heldLifetime: Double = 60
    }

    let contents: Locked<Contents>

    /// How many tenants' keys a store keeps open by default.
    static let defaultLimit = 4096

    init(limit: Int = TenantKeyCache.defaultLimit) { contents = Locked(Contents(limit: limit)) }

    var limit: Int {
        get { contents.withLock { $0.limit } }
        set {
            contents.withLock {
                $0.limit = max(0, newValue)
                Self.trim(&$0)
            }
        }
    }

    var count: Int { contents.withLock { $0.entries.count } }

    /// Where the keys of tables whose tenants' keys are held come from.
    var holder: (any TenantKeyHolder)? {
        get { contents.withLock { $0.holder } }
        set { contents.withLock { $0.holder = newValue } }
    }

    /// How long a held tenant's opened keys are kept before the holder is asked again.
    var heldLifetime: Double {
        get { contents.withLock { $0.heldLifetime } }
        set {
            contents.withLock { contents in
                contents.heldLifetime = max(0, newValue)
                // Held keys kept under the old lifetime are asked for again.
                contents.entries = contents.entries.filter { $0.value.expires == nil }
            }
        }
    }

    /// The keys kept for `name` when they were opened from `sealed` (and,
    /// a held tenant's, have not expired); nil when none are.
    func keys(_ name: Name, sealed: [UInt8]) -> StoreKeys? {
        contents.withLock { contents in
            guard let entry = contents.entries[name], entry.sealed == sealed else { return nil }
            if let expires = entry.expires, Date().timeIntervalSince1970 >= expires {
                contents.entries.removeValue(forKey: name)
                return nil
            }
            contents.tick &+= 1
            entry.used = contents.tick
            return entry.keys
        }
    }

    func keep(_ keys: StoreKeys, _ name: Name, sealed: [UInt8], held: Bool = false) {
        contents.withLock { contents in
            guard contents.limit > 0, !held || contents.heldLifetime > 0 else { return }
            contents.tick &+= 1
            contents.entries[name] = Entry(
                sealed: sealed, keys: keys, used: contents.tick,
                expires: held ? Date().timeIntervalSince1970 + contents.heldLifetime : nil)
            Self.trim(&contents)
        }
    }

    func forget(_ name: Name) { contents.withLock { _ = $0.entries.removeValue(forKey: name) } }

    /// Drops the least recently used entries past the limit: down to seven
    /// eighths of it at once, so that a full cache sorts once per
    /// limit/8 insertions, not at each.
    static func trim(_ contents: inout Contents) {
        guard contents.entries.count > contents.limit else { return }
        let keep = contents.limit - contents.limit / 8
        let oldest = contents.entries.sorted { $0.value.used < $1.value.used }.prefix(contents.entries.count - keep)
        for (name, _) in oldest { contents.entries.removeValue(forKey: name) }
    }
}
