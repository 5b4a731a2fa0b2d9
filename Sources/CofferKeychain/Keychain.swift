import Coffer
import Crypto
import Foundation

/// Errors of the keychain, with open codes like `CofferError`'s.
public struct KeychainError: Error, Hashable, CustomStringConvertible, CustomDebugStringConvertible, Sendable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        public static let itemNotFound = Code("itemNotFound")
        public static let duplicateItem = Code("duplicateItem")
        /// Locked, and no way to unlock it without a person.
        public static let interactionNotAllowed = Code("interactionNotAllowed")
        /// The password or key file does not unlock the keychain.
        public static let authenticationFailed = Code("authenticationFailed")
        /// The keychain's bytes do not authenticate or do not parse.
        public static let corrupted = Code("corrupted")
        /// The file or its folder is open to other users, or is a symlink.
        public static let insecurePermissions = Code("insecurePermissions")
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// The keychain file is older than one this user already wrote at
        /// that path: an earlier copy was put back.
        public static let rolledBack = Code("rolledBack")
        public static let io = Code("io")
        public static let invalidArgument = Code("invalidArgument")
    }

    public var code: Code
    /// For people; never holds a secret. Shown through `description`.
    private var reason: String
    /// Where in Coffer the error was raised (`#fileID`, `#line`), for bug
    /// reports; not part of equality.
    public var file: String
    public var line: Int

    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

    /// The reason, for people.
    public var description: String { reason }
    public var debugDescription: String { "KeychainError(\(code), \"\(reason)\", at \(file):\(line))" }
    public static func == (lhs: KeychainError, rhs: KeychainError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// Apple's two item classes that Coffer needs.
public enum ItemClass: String, Codable, Sendable, CaseIterable {
    /// Primary key: service + account.
    case genericPassword
    /// Primary key: application tag + key type.
    case key
}

/// An item's attributes (never its secret).
public struct KeychainItem: Codable, Sendable, Equatable {
    public var itemClass: ItemClass
    public var service: String?
    public var account: String?
    public var applicationTag: String?
    public var keyType: KeychainKeyType?
    public var label: String?
    public var comment: String?
    public var accessGroup: String?
    public var accessibility: Accessibility
    public var synchronizable: Bool
    public var created: Date
    public var modified: Date

    /// A generic password named by service and account.
    public static func password(
        service: String, account: String, label: String? = nil, comment: String? = nil,
        accessGroup: String? = nil, accessibility: Accessibility = .whenUnlocked, synchronizable: Bool = false
    ) -> KeychainItem {
        let now = Date()
        return KeychainItem(
            itemClass: .genericPassword, service: service, account: account, applicationTag: nil, keyType: nil,
            label: label,
            comment: comment, accessGroup: accessGroup, accessibility: accessibility, synchronizable: synchronizable,
            created: now, modified: now)
    }

    /// A key named by application tag and type.
    public static func key(
        tag: String, type: KeychainKeyType, label: String? = nil, comment: String? = nil,
        accessGroup: String? = nil, accessibility: Accessibility = .whenUnlocked, synchronizable: Bool = false
    ) -> KeychainItem {
        let now = Date()
        return KeychainItem(
            itemClass: .key, service: nil, account: nil, applicationTag: tag, keyType: type, label: label,
            comment: comment, accessGroup: accessGroup, accessibility: accessibility, synchronizable: synchronizable,
            created: now, modified: now)
    }

    /// Two items collide when they are of one class and share the primary key
    /// (and the access group, the namespace).
    func collides(with other: KeychainItem) -> Bool {
        guard itemClass == other.itemClass, accessGroup == other.accessGroup else { return false }
        switch itemClass {
        case .genericPassword: return service == other.service && account == other.account
        case .key: return applicationTag == other.applicationTag && keyType == other.keyType
        }
    }
}

/// What to match: nil fields match anything.
public struct KeychainQuery: Sendable, Equatable {
    public var itemClass: ItemClass
    public var service: String?
    public var account: String?
    public var applicationTag: String?
    public var keyType: KeychainKeyType?
    public var label: String?
    public var accessGroup: String?

    public init(
        itemClass: ItemClass, service: String? = nil, account: String? = nil, applicationTag: String? = nil,
        keyType: KeychainKeyType? = nil, label: String? = nil, accessGroup: String? = nil
    ) {
        self.itemClass = itemClass
        self.service = service
        self.account = account
        self.applicationTag = applicationTag
        self.keyType = keyType
        self.label = label
        self.accessGroup = accessGroup
    }

    public static func password(service: String? = nil, account: String? = nil) -> KeychainQuery {
        KeychainQuery(itemClass: .genericPassword, service: service, account: account)
    }

    public static func key(tag: String? = nil, type: KeychainKeyType? = nil) -> KeychainQuery {
        KeychainQuery(itemClass: .key, applicationTag: tag, keyType: type)
    }

    public func matches(_ item: KeychainItem) -> Bool {
        item.itemClass == itemClass
            && (service == nil || item.service == service) && (account == nil || item.account == account)
            && (applicationTag == nil || item.applicationTag == applicationTag)
            && (keyType == nil || item.keyType == keyType)
            && (label == nil || item.label == label) && (accessGroup == nil || item.accessGroup == accessGroup)
    }
}

/// What an update changes; nil leaves a field alone (`.some(nil)` clears an
/// optional one). Changing a primary-key field may make two items collide:
/// that update is `duplicateItem` and changes nothing.
public struct KeychainChanges: Sendable {
    public var service: String?
    public var account: String?
    public var applicationTag: String?
    public var label: String??
    public var comment: String??
    public var accessibility: Accessibility?
    public var synchronizable: Bool?
    public var data: SecretBytes?

    public init(
        service: String? = nil, account: String? = nil, applicationTag: String? = nil, label: String?? = nil,
        comment: String?? = nil, accessibility: Accessibility? = nil, synchronizable: Bool? = nil,
        data: SecretBytes? = nil
    ) {
        self.service = service
        self.account = account
        self.applicationTag = applicationTag
        self.label = label
        self.comment = comment
        self.accessibility = accessibility
        self.synchronizable = synchronizable
        self.data = data
    }

    /// The item after these changes, stamped modified `now`. Primary-key
    /// fields of the other class are refused.
    public func applied(to item: KeychainItem, now: Date) throws -> KeychainItem {
        var changed = item
        if service != nil || account != nil, item.itemClass != .genericPassword {
            throw KeychainError(.invalidArgument, "only a password item has a service and an account")
        }
        if applicationTag != nil, item.itemClass != .key {
            throw KeychainError(.invalidArgument, "only a key item has an application tag")
        }
        if let service { changed.service = service }
        if let account { changed.account = account }
        if let applicationTag { changed.applicationTag = applicationTag }
        if let label { changed.label = label }
        if let comment { changed.comment = comment }
        if let accessibility { changed.accessibility = accessibility }
        if let synchronizable { changed.synchronizable = synchronizable }
        changed.modified = now
        return changed
    }
}

/// Apple's keychain model, on every platform (docs/keychain.md).
///
/// - `add` fails with `duplicateItem` when an item with the same primary key exists.
/// - `copyMatching` returns every match (throws `itemNotFound` when none).
/// - `update` changes every match; a change that makes two items collide is
///   `duplicateItem`, and then nothing changes.
/// - `delete` removes every match (throws `itemNotFound` when none).
public protocol Keychain: Sendable {
    /// Adds `item` with its secret `data`; `duplicateItem` when one with
    /// the same primary key is there.
    ///
    /// ```swift
    /// try keychain.add(.password(service: "api", account: "me"), data: SecretBytes(Array(token.utf8)))
    /// ```
    func add(_ item: KeychainItem, data: SecretBytes) throws
    func copyMatching(_ query: KeychainQuery) throws -> [KeychainItem]
    /// The secret of the one item matching `query`.
    ///
    /// ```swift
    /// let token = try keychain.copyData(.password(service: "api", account: "me"))
    /// ```
    func copyData(_ query: KeychainQuery) throws -> SecretBytes
    func update(_ query: KeychainQuery, with changes: KeychainChanges) throws
    func delete(_ query: KeychainQuery) throws

    /// Generates a key into the keychain and returns its public key (nil for
    /// a symmetric key). Backends with their own key generation (Apple's
    /// Secure Enclave) implement it; the default stores PKCS#8.
    @discardableResult
    func generateKey(_ type: KeychainKeyType, tag: String, label: String?) throws -> AsymmetricPublicKey?

    /// ECDH between the stored P-256 or X25519 key under `tag` and `peer`,
    /// then the KDF: the key never leaves the keychain. Backends whose keys
    /// cannot be exported (a Secure Enclave) implement it.
    func agree(
        tag: String, type: KeychainKeyType, peer: AsymmetricPublicKey, kdf: KeyAgreement.KDF, size: Int,
        sharedInfo: [UInt8]
    ) throws -> SymmetricKey

    /// RSA-OAEP decryption with the stored RSA key under `tag`: the key
    /// never leaves the keychain.
    func rsaDecrypt(_ ciphertext: [UInt8], tag: String, type: KeychainKeyType, hash: RSAEncryption.Hash) throws
        -> SecretBytes

    /// The public key of the key under `tag`. Backends whose private keys
    /// cannot be exported (a Secure Enclave) implement it; the default
    /// derives it from the stored private key.
    func publicKey(tag: String, type: KeychainKeyType) throws -> AsymmetricPublicKey

    /// The private key itself: the explicit, named way a key leaves the
    /// keychain. Backends that cannot export keys throw.
    func exportPrivateKey(tag: String, type: KeychainKeyType) throws -> AsymmetricPrivateKey

    /// The key under `tag`, generated first if there is none (nil for a
    /// symmetric key). The default reads, then generates, then re-reads if
    /// another process generated it first.
    func getOrCreateKey(_ type: KeychainKeyType, tag: String, label: String?) throws -> AsymmetricPublicKey?
}

extension Keychain {
    /// Changes the label, comment or data of every match.
    public func update(_ query: KeychainQuery, label: String?? = nil, comment: String?? = nil, data: SecretBytes? = nil)
        throws
    {
        try update(query, with: KeychainChanges(label: label, comment: comment, data: data))
    }
}
