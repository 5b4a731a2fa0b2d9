#if SecretService && canImport(CLibSecret)
import CLibSecret
import Coffer
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A keychain kept by the desktop's Secret Service (GNOME Keyring, KWallet)
/// through libsecret. Built only with the `SecretService` package trait.
///
/// Every item is a Secret Service item of the schema `org.coffer.Keychain`
/// with string attributes: the Coffer keychain `name` (so several Coffer
/// keychains share one collection), the item class and primary key, and the
/// rest of `KeychainItem`'s attributes. The secret is the item's value,
/// stored as `application/octet-stream`. The Secret Service's own item label
/// shows the item's label, or its primary key when it has none.
///
/// A locked collection hides its items from a plain search, so every
/// operation first asks whether the collection (and any item it finds) is
/// locked and answers `interactionNotAllowed`: unlocking needs a person, a
/// prompt this type never raises.
///
/// The Secret Service has no transactions: this type serialises its own
/// operations inside the process, and across Coffer processes with an
/// `flock` on `$XDG_RUNTIME_DIR/coffer/secret-service.lock` when that folder
/// exists. Other programs editing the same items are not serialised.
/// (That is also why it is `@unchecked Sendable`: every libsecret call
/// goes through `Self.lock` (a `Locked`, that is a `Mutex`) and that `flock`.)
public final class SecretServiceKeychain: Keychain, @unchecked Sendable {
    /// The Coffer keychain's name: an attribute of every item it holds.
    public let name: String
    /// The alias of the collection new items go to: `default` (the login
    /// keyring), `session` (in memory until logout), or another alias.
    public let collection: String
    /// One lock for every instance: operations of different keychains share
    /// libsecret's connection and the daemon's collection. It counts the
    /// operations it has serialised (a lock around an empty value trips
    /// ThreadSanitizer, which places the empty value on the lock's field).
    static let lock = Locked(0)
    let service: UnsafeMutablePointer<SecretService>
    let schema: UnsafeMutablePointer<SecretSchema>
    let crossProcessLockPath: String?

    static let schemaName = "org.coffer.Keychain"

    /// The schema's attributes, each a string, named as libsecret stores them.
    enum Attribute: String, CaseIterable {
        case keychain = "coffer-keychain"
        case itemClass = "class"
        case applicationTag = "application-tag"
        case keyType = "key-type"
        case accessGroup = "access-group"
        case service, account, label, comment, accessibility, synchronizable, created, modified
    }

    /// Connects to the Secret Service on the session bus. Throws `io` when
    /// none answers (no session bus, or no keyring daemon).
    public init(name: String = "default", collection: String = "default") throws {
        guard !name.isEmpty else { throw KeychainError(.invalidArgument, "a keychain name is not empty") }
        self.name = name
        self.collection = collection
        var error: UnsafeMutablePointer<GError>?
        guard let service = secret_service_get_sync(SECRET_SERVICE_NONE, nil, &error) else {
            throw Self.keychainError(error, doing: "connect to the Secret Service on the D-Bus session bus")
        }
        self.service = service
        // Every attribute is a string (SECRET_SCHEMA_ATTRIBUTE_STRING, 0): a table of names to 0.
        let schemaTypes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, nil)!
        for attribute in Attribute.allCases {
            g_hash_table_insert(
                schemaTypes, UnsafeMutableRawPointer(g_strdup(attribute.rawValue)),
                UnsafeMutableRawPointer(bitPattern: Int(SECRET_SCHEMA_ATTRIBUTE_STRING.rawValue)))
        }
        schema = secret_schema_newv(Self.schemaName, SECRET_SCHEMA_NONE, schemaTypes)
        g_hash_table_unref(schemaTypes)
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty,
            FileManager.default.fileExists(atPath: runtime)
        {
            let folder = runtime + "/coffer"
            _ = mkdir(folder, 0o700)
            crossProcessLockPath = folder + "/secret-service.lock"
        } else {
            crossProcessLockPath = nil
        }
    }

    deinit {
        secret_schema_unref(schema)
        g_object_unref(UnsafeMutableRawPointer(service))
    }

    /// Drops libsecret's shared connection to the Secret Service, so that
    /// keychains made afterwards talk to a daemon that has restarted since.
    /// Keychains made before keep the old connection.
    public static func disconnectShared() {
        secret_service_disconnect()
    }

    // MARK: Keychain

    public func add(_ item: KeychainItem, data: SecretBytes) throws {
        try serialised {
            try ItemStore.validate(item)
            let target = try targetCollection()
            defer { g_object_unref(UnsafeMutableRawPointer(target)) }
            let samePrimaryKey = KeychainQuery(
                itemClass: item.itemClass, service: item.service, account: item.account,
                applicationTag: item.applicationTag, keyType: item.keyType)
            let existing = try items(matching: samePrimaryKey, loadSecrets: false)
            defer { existing.forEach { g_object_unref(UnsafeMutableRawPointer($0.handle)) } }
            guard !existing.contains(where: { $0.item.collides(with: item) }) else {
                throw KeychainError(
                    .duplicateItem,
                    "an item with the same \(item.itemClass == .key ? "tag and key type" : "service and account") exists"
                )
            }
            let attributes = Self.table(attributes(of: item))
            defer { g_hash_table_unref(attributes) }
            let value = Self.value(data)
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            var error: UnsafeMutablePointer<GError>?
            guard
                let created = secret_item_create_sync(
                    target, schema, attributes, Self.displayLabel(item), value,
                    SECRET_ITEM_CREATE_NONE, nil, &error)
            else {
                throw Self.keychainError(error, doing: "create the item")
            }
            g_object_unref(UnsafeMutableRawPointer(created))
        }
    }

    public func copyMatching(_ query: KeychainQuery) throws -> [KeychainItem] {
        try serialised {
            try checkCollectionUnlocked()
            let found = try items(matching: query, loadSecrets: false)
            defer { found.forEach { g_object_unref(UnsafeMutableRawPointer($0.handle)) } }
            guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
            return found.map(\.item).sorted { $0.created < $1.created }
        }
    }

    public func copyData(_ query: KeychainQuery) throws -> SecretBytes {
        try serialised {
            try checkCollectionUnlocked()
            let found = try items(matching: query, loadSecrets: true)
            defer { found.forEach { g_object_unref(UnsafeMutableRawPointer($0.handle)) } }
            guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
            guard found.count == 1 else {
                throw KeychainError(.invalidArgument, "\(found.count) items match; name exactly one")
            }
            guard let value = secret_item_get_secret(found[0].handle) else {
                throw KeychainError(.interactionNotAllowed, "the Secret Service did not hand over the secret (locked?)")
            }
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            var length = 0
            guard let bytes = secret_value_get(value, &length) else { return SecretBytes([]) }
            return SecretBytes(UnsafeRawBufferPointer(start: bytes, count: length))
        }
    }

    public func update(_ query: KeychainQuery, with changes: KeychainChanges) throws {
        try serialised {
            try checkCollectionUnlocked()
            let all = try items(matching: KeychainQuery(itemClass: query.itemClass), loadSecrets: false)
            defer { all.forEach { g_object_unref(UnsafeMutableRawPointer($0.handle)) } }
            guard all.contains(where: { query.matches($0.item) }) else {
                throw KeychainError(.itemNotFound, "no item matches")
            }
            let now = Date()
            let after = try all.map { query.matches($0.item) ? try changes.applied(to: $0.item, now: now) : $0.item }
            try ItemStore.checkNoCollisions(after)
            let value = changes.data.map(Self.value)
            defer { value.map { secret_value_unref(UnsafeMutableRawPointer($0)) } }
            for (index, entry) in all.enumerated() where query.matches(entry.item) {
                var error: UnsafeMutablePointer<GError>?
                if let value, secret_item_set_secret_sync(entry.handle, value, nil, &error) == 0 {
                    throw Self.keychainError(error, doing: "replace the secret")
                }
                let attributes = Self.table(attributes(of: after[index]))
                defer { g_hash_table_unref(attributes) }
                if secret_item_set_attributes_sync(entry.handle, schema, attributes, nil, &error) == 0 {
                    throw Self.keychainError(error, doing: "update the attributes")
                }
                if secret_item_set_label_sync(entry.handle, Self.displayLabel(after[index]), nil, &error) == 0 {
                    throw Self.keychainError(error, doing: "update the label")
                }
            }
        }
    }

    public func delete(_ query: KeychainQuery) throws {
        try serialised {
            try checkCollectionUnlocked()
            let found = try items(matching: query, loadSecrets: false)
            defer { found.forEach { g_object_unref(UnsafeMutableRawPointer($0.handle)) } }
            guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
            for entry in found {
                var error: UnsafeMutablePointer<GError>?
                if secret_item_delete_sync(entry.handle, nil, &error) == 0 {
                    throw Self.keychainError(error, doing: "delete the item")
                }
            }
        }
    }
}
#endif
