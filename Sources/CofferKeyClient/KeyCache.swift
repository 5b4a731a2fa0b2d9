import Coffer
import CofferKeychain
import Crypto
import Foundation

/// How long a fetched key may be used without asking the server again, as
/// the AWS Encryption SDK's caching materials manager limits its data keys:
/// by age and by number of uses, whichever comes first. Within both, the
/// client works offline.
///
/// ```swift
/// let client = try KeyServerClient(
///     server: url, account: user.id, token: { try await auth.idToken() },
///     cache: try FileKeychain.open(path: path, secret: deviceSecret),
///     policy: KeyCachePolicy(timeToLive: 600, maxUses: 100))   // ten minutes or a hundred uses
/// ```
public struct KeyCachePolicy: Sendable, Equatable {
    /// Seconds after fetching.
    public var timeToLive: Int64
    /// Times a cached key may be handed out.
    public var maxUses: Int
    /// When the cached keys can be read (Apple's `kSecAttrAccessible`):
    /// after the first unlock since boot, on this device only by default,
    /// so that a background task or an extension reads them while the
    /// device is locked, and no backup carries them (they are fetched again).
    public var accessibility: Accessibility
    /// The keychain access group the cached keys are kept in, shared with
    /// the app's extensions (Apple's `kSecAttrAccessGroup`); nil for the
    /// app's default group.
    public var accessGroup: String?

    public init(
        timeToLive: Int64 = 3600, maxUses: Int = 10_000,
        accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly, accessGroup: String? = nil
    ) {
        self.timeToLive = timeToLive
        self.maxUses = maxUses
        self.accessibility = accessibility
        self.accessGroup = accessGroup
    }
}

/// Fetched keys kept in a `Keychain`, one generic-password item per key:
/// service `coffer key server <server>`, account `<account>|<purpose>|<device>|<current or vN>`.
/// The item's secret is 64 bytes: `CKC2`, the version (4 bytes), the time
/// fetched (8, seconds since 1970), the uses so far (4), the seconds the
/// server lets the key be kept (4; all ones when it did not say), the key
/// id (8) and the key (32), big-endian. Items of the 60-byte `CKC1` form,
/// without the server's seconds, are still read.
struct KeyCache: Sendable {
    let keychain: any Keychain
    let service: String
    let policy: KeyCachePolicy

    struct Entry: Sendable {
        var version: Int
        var fetched: Int64
        var uses: Int
        /// The server's `cacheSeconds` (nil: it did not say).
        var lifetime: Int64?
        var keyID: String
        var key: SymmetricKey
    }

    /// The cache's items under `account` (every account when nil), in its access group.
    func query(_ account: String?) -> KeychainQuery {
        KeychainQuery(itemClass: .genericPassword, service: service, account: account, accessGroup: policy.accessGroup)
    }

    static let magic = Array("CKC2".utf8)
    static let formerMagic = Array("CKC1".utf8)

    /// The entry under `account`, if it is still within the policy; counts one use.
    func take(_ account: String, now: Int64) throws -> Entry? {
        let query = query(account)
        let secret: SecretBytes
        do {
            secret = try keychain.copyData(query)
        } catch let error as KeychainError where error.code == .itemNotFound {
            return nil
        }
        guard var entry = Self.decode(secret) else {
            try? keychain.delete(query)
            return nil
        }
        let timeToLive = min(policy.timeToLive, entry.lifetime ?? .max)
        guard now - entry.fetched < timeToLive, now >= entry.fetched, entry.uses < policy.maxUses else {
            return nil
        }
        entry.uses += 1
        try keychain.update(query, with: KeychainChanges(data: Self.encode(entry)))
        return entry
    }

    /// Keeps `entry` (a fresh fetch, counted as one use) under `account`.
    func put(_ entry: Entry, _ account: String) throws {
        let data = Self.encode(entry)
        let query = query(account)
        do {
            try keychain.add(
                .password(
                    service: service, account: account, label: "Coffer key server cache",
                    accessGroup: policy.accessGroup, accessibility: policy.accessibility),
                data: data)
        } catch let error as KeychainError where error.code == .duplicateItem {
            try keychain.update(query, with: KeychainChanges(data: data))
        }
    }

    /// Forgets the key under `account`, if the cache holds one.
    func remove(_ account: String) throws {
        do {
            try keychain.delete(query(account))
        } catch let error as KeychainError where error.code == .itemNotFound {}
    }

    /// Forgets every key this cache holds for `account` (sign-out).
    func forget(accountPrefix: String) throws {
        for item in try keychain.copyMatching(query(nil))
        where item.account?.hasPrefix(accountPrefix) == true {
            try keychain.delete(query(item.account))
        }
    }

    static func encode(_ entry: Entry) -> SecretBytes {
        var bytes = magic
        withUnsafeBytes(of: UInt32(entry.version).bigEndian) { bytes += $0 }
        withUnsafeBytes(of: entry.fetched.bigEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt32(clamping: entry.uses).bigEndian) { bytes += $0 }
        withUnsafeBytes(of: (entry.lifetime.map { UInt32(clamping: $0) } ?? .max).bigEndian) { bytes += $0 }
        bytes += Hex.decode(entry.keyID) ?? [UInt8](repeating: 0, count: 8)
        entry.key.withUnsafeBytes { bytes += $0 }
        return SecretBytes(bytes)
    }

    static func decode(_ secret: SecretBytes) -> Entry? {
        secret.withUnsafeBytes { raw -> Entry? in
            var bytes = [UInt8](raw)
            if bytes.count == 60, Array(bytes[0..<4]) == formerMagic {
                bytes.insert(contentsOf: [0xff, 0xff, 0xff, 0xff], at: 20)  // the server's seconds: not said
            } else {
                guard bytes.count == 64, Array(bytes[0..<4]) == magic else { return nil }
            }
            func number(_ range: Range<Int>) -> UInt64 { bytes[range].reduce(0) { $0 << 8 | UInt64($1) } }
            let lifetime = number(20..<24)
            return Entry(
                version: Int(number(4..<8)), fetched: Int64(bitPattern: number(8..<16)), uses: Int(number(16..<20)),
                lifetime: lifetime == UInt32.max ? nil : Int64(lifetime), keyID: Hex.encode(Array(bytes[24..<32])),
                key: SymmetricKey(data: bytes[32..<64]))
        }
    }
}
