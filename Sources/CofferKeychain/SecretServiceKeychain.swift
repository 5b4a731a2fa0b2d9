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
public final class SecretServiceKeychain: Keychain, @unchecked Sendable {  // libsecret calls serialised by `Self.lock` (a Mutex) and a cross-process flock
    /// The Coffer keychain's name: an attribute of every item it holds.
    public let name: String
    /// The alias of the collection new items go to: `default` (the login
    /// keyring), `session` (in memory until logout), or another alias.
    public let collection: String
    /// One lock for every instance: operations of different keychains share
    /// libsecret's connection and the daemon's collection.
    static let lock = Mutex(())
    private let service: UnsafeMutablePointer<SecretService>
    private let schema: UnsafeMutablePointer<SecretSchema>
    let crossProcessLockPath: String?

    static let schemaName = "org.coffer.Keychain"

    enum Attribute {
        static let keychain = "coffer-keychain"
        static let itemClass = "class"
        static let service = "service"
        static let account = "account"
        static let applicationTag = "application-tag"
        static let keyType = "key-type"
        static let label = "label"
        static let comment = "comment"
        static let accessGroup = "access-group"
        static let accessibility = "accessibility"
        static let synchronizable = "synchronizable"
        static let created = "created"
        static let modified = "modified"
        static let all = [keychain, itemClass, service, account, applicationTag, keyType, label, comment, accessGroup,
                          accessibility, synchronizable, created, modified]
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
        for attribute in Attribute.all {
            g_hash_table_insert(schemaTypes, UnsafeMutableRawPointer(g_strdup(attribute)),
                                UnsafeMutableRawPointer(bitPattern: Int(SECRET_SCHEMA_ATTRIBUTE_STRING.rawValue)))
        }
        schema = secret_schema_newv(Self.schemaName, SECRET_SCHEMA_NONE, schemaTypes)
        g_hash_table_unref(schemaTypes)
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty,
           FileManager.default.fileExists(atPath: runtime) {
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
            let samePrimaryKey = KeychainQuery(itemClass: item.itemClass, service: item.service, account: item.account,
                                               applicationTag: item.applicationTag, keyType: item.keyType)
            let existing = try items(matching: samePrimaryKey, loadSecrets: false)
            defer { existing.forEach { g_object_unref(UnsafeMutableRawPointer($0.handle)) } }
            guard !existing.contains(where: { $0.item.collides(with: item) }) else {
                throw KeychainError(.duplicateItem, "an item with the same \(item.itemClass == .key ? "tag and key type" : "service and account") exists")
            }
            let attributes = Self.table(attributes(of: item))
            defer { g_hash_table_unref(attributes) }
            let value = Self.value(data)
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            var error: UnsafeMutablePointer<GError>?
            guard let created = secret_item_create_sync(target, schema, attributes, Self.displayLabel(item), value,
                                                        SECRET_ITEM_CREATE_NONE, nil, &error) else {
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
            guard found.count == 1 else { throw KeychainError(.invalidArgument, "\(found.count) items match; name exactly one") }
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
            guard all.contains(where: { query.matches($0.item) }) else { throw KeychainError(.itemNotFound, "no item matches") }
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
                if secret_item_delete_sync(entry.handle, nil, &error) == 0 { throw Self.keychainError(error, doing: "delete the item") }
            }
        }
    }

    // MARK: Collections and items
    /// Whether the collection new items go to is locked (nil when it does not exist).
    public func isLocked() throws -> Bool? {
        try serialised { () throws -> Bool? in
            guard let collection = try lookUpCollection() else { return nil }
            defer { g_object_unref(UnsafeMutableRawPointer(collection)) }
            return secret_collection_get_locked(collection) != 0
        }
    }

    /// Locks the collection new items go to (no person needed for that).
    public func lockCollection() throws {
        try serialised {
            guard let collection = try lookUpCollection() else { throw KeychainError(.itemNotFound, "there is no collection \(self.collection)") }
            defer { g_object_unref(UnsafeMutableRawPointer(collection)) }
            let objects = g_list_append(nil, UnsafeMutableRawPointer(collection))
            defer { g_list_free(objects) }
            var error: UnsafeMutablePointer<GError>?
            if secret_service_lock_sync(service, objects, nil, nil, &error) < 0 || error != nil {
                throw Self.keychainError(error, doing: "lock the collection")
            }
        }
    }

    private func lookUpCollection() throws -> UnsafeMutablePointer<SecretCollection>? {
        var error: UnsafeMutablePointer<GError>?
        let found = secret_collection_for_alias_sync(service, collection, SECRET_COLLECTION_NONE, nil, &error)
        if error != nil { throw Self.keychainError(error, doing: "find the collection \(collection)") }
        return found
    }

    private func checkCollectionUnlocked() throws {
        guard let target = try lookUpCollection() else { return }  // no collection: nothing to find
        defer { g_object_unref(UnsafeMutableRawPointer(target)) }
        if secret_collection_get_locked(target) != 0 { throw Self.lockedError }
    }

    private func targetCollection() throws -> UnsafeMutablePointer<SecretCollection> {
        guard let target = try lookUpCollection() else {
            throw KeychainError(.interactionNotAllowed, "the Secret Service has no collection \(collection); creating one needs a person")
        }
        if secret_collection_get_locked(target) != 0 {
            g_object_unref(UnsafeMutableRawPointer(target))
            throw Self.lockedError
        }
        return target
    }

    static let lockedError = KeychainError(
        .interactionNotAllowed,
        "the Secret Service collection is locked; unlocking it needs a person (or gnome-keyring-daemon --unlock with the password on stdin)")

    private struct Found {
        var handle: UnsafeMutablePointer<SecretItem>
        var item: KeychainItem
    }

    /// This keychain's items of the query's class and primary key, narrowed
    /// by the rest of the query. Throws `interactionNotAllowed` if any is locked.
    private func items(matching query: KeychainQuery, loadSecrets: Bool) throws -> [Found] {
        var wanted = [Attribute.keychain: name, Attribute.itemClass: query.itemClass.rawValue]
        wanted[Attribute.service] = query.service
        wanted[Attribute.account] = query.account
        wanted[Attribute.applicationTag] = query.applicationTag
        wanted[Attribute.keyType] = query.keyType?.rawValue
        wanted[Attribute.label] = query.label
        wanted[Attribute.accessGroup] = query.accessGroup
        let attributes = Self.table(wanted)
        defer { g_hash_table_unref(attributes) }
        var flags = SECRET_SEARCH_ALL.rawValue
        if loadSecrets { flags |= SECRET_SEARCH_LOAD_SECRETS.rawValue }
        var error: UnsafeMutablePointer<GError>?
        let list = secret_service_search_sync(service, schema, attributes, SecretSearchFlags(rawValue: flags), nil, &error)
        if error != nil { throw Self.keychainError(error, doing: "search") }
        var found: [Found] = []
        var failure: (any Error)?
        var node = list
        while let current = node {
            let handle = current.pointee.data!.assumingMemoryBound(to: SecretItem.self)
            node = current.pointee.next
            if failure != nil { g_object_unref(UnsafeMutableRawPointer(handle)); continue }
            if secret_item_get_locked(handle) != 0 {
                failure = Self.lockedError
                g_object_unref(UnsafeMutableRawPointer(handle))
                continue
            }
            do {
                let item = try Self.item(from: handle)
                if query.matches(item) { found.append(Found(handle: handle, item: item)) } else { g_object_unref(UnsafeMutableRawPointer(handle)) }
            } catch {
                failure = error
                g_object_unref(UnsafeMutableRawPointer(handle))
            }
        }
        g_list_free(list)
        if let failure {
            found.forEach { g_object_unref(UnsafeMutableRawPointer($0.handle)) }
            throw failure
        }
        return found
    }
}
#endif
