#if SecretService && canImport(CLibSecret)
import CLibSecret
import Coffer
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// SecretServiceKeychain, continued: the collection items go to, whether it
// is locked, and finding items in it.
extension SecretServiceKeychain {
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
            guard let collection = try lookUpCollection() else {
                throw KeychainError(.itemNotFound, "there is no collection \(self.collection)")
            }
            defer { g_object_unref(UnsafeMutableRawPointer(collection)) }
            let objects = g_list_append(nil, UnsafeMutableRawPointer(collection))
            defer { g_list_free(objects) }
            var error: UnsafeMutablePointer<GError>?
            if secret_service_lock_sync(service, objects, nil, nil, &error) < 0 || error != nil {
                throw Self.keychainError(error, doing: "lock the collection")
            }
        }
    }

    func lookUpCollection() throws -> UnsafeMutablePointer<SecretCollection>? {
        var error: UnsafeMutablePointer<GError>?
        let found = secret_collection_for_alias_sync(service, collection, SECRET_COLLECTION_NONE, nil, &error)
        if error != nil { throw Self.keychainError(error, doing: "find the collection \(collection)") }
        return found
    }

    func checkCollectionUnlocked() throws {
        guard let target = try lookUpCollection() else { return }  // no collection: nothing to find
        defer { g_object_unref(UnsafeMutableRawPointer(target)) }
        if secret_collection_get_locked(target) != 0 { throw Self.lockedError }
    }

    func targetCollection() throws -> UnsafeMutablePointer<SecretCollection> {
        guard let target = try lookUpCollection() else {
            throw KeychainError(
                .interactionNotAllowed,
                "the Secret Service has no collection \(collection); creating one needs a person")
        }
        if secret_collection_get_locked(target) != 0 {
            g_object_unref(UnsafeMutableRawPointer(target))
            throw Self.lockedError
        }
        return target
    }

    static let lockedError = KeychainError(
        .interactionNotAllowed,
        "the Secret Service collection is locked; unlocking it needs a person (or gnome-keyring-daemon --unlock with the password on stdin)"
    )

    struct Found {
        var handle: UnsafeMutablePointer<SecretItem>
        var item: KeychainItem
    }

    /// This keychain's items of the query's class and primary key, narrowed
    /// by the rest of the query. Throws `interactionNotAllowed` if any is locked.
    func items(matching query: KeychainQuery, loadSecrets: Bool) throws -> [Found] {
        let attributes = Self.table(attributes(matching: query))
        defer { g_hash_table_unref(attributes) }
        var flags = SECRET_SEARCH_ALL.rawValue
        if loadSecrets { flags |= SECRET_SEARCH_LOAD_SECRETS.rawValue }
        var error: UnsafeMutablePointer<GError>?
        let list = secret_service_search_sync(
            service, schema, attributes, SecretSearchFlags(rawValue: flags), nil, &error)
        if error != nil { throw Self.keychainError(error, doing: "search") }
        var found: [Found] = []
        var failure: (any Error)?
        var node = list
        while let current = node {
            let handle = current.pointee.data!.assumingMemoryBound(to: SecretItem.self)
            node = current.pointee.next
            if failure != nil {
                g_object_unref(UnsafeMutableRawPointer(handle))
                continue
            }
            if secret_item_get_locked(handle) != 0 {
                failure = Self.lockedError
                g_object_unref(UnsafeMutableRawPointer(handle))
                continue
            }
            do {
                let item = try Self.item(from: handle)
                if query.matches(item) {
                    found.append(Found(handle: handle, item: item))
                } else {
                    g_object_unref(UnsafeMutableRawPointer(handle))
                }
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
