#if SecretService && canImport(CLibSecret)
import CLibSecret
import Coffer
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// How items and errors cross between Swift and libsecret/GLib, and the
// serialisation every libsecret call goes through.
extension SecretServiceKeychain {
    /// The attributes a search for `query` names: this keychain, the class,
    /// and each field the query sets.
    func attributes(matching query: KeychainQuery) -> [Attribute: String] {
        var attributes: [Attribute: String] = [.keychain: name, .itemClass: query.itemClass.rawValue]
        attributes[.service] = query.service
        attributes[.account] = query.account
        attributes[.applicationTag] = query.applicationTag
        attributes[.keyType] = query.keyType?.rawValue
        attributes[.label] = query.label
        attributes[.accessGroup] = query.accessGroup
        return attributes
    }

    /// Every attribute of `item`: those of its query, and the rest.
    func attributes(of item: KeychainItem) -> [Attribute: String] {
        let primary = KeychainQuery(
            itemClass: item.itemClass, service: item.service, account: item.account,
            applicationTag: item.applicationTag, keyType: item.keyType, label: item.label,
            accessGroup: item.accessGroup)
        return attributes(matching: primary).merging(
            [
                .comment: item.comment,
                .accessibility: item.accessibility.rawValue,
                .synchronizable: item.synchronizable ? "1" : "0",
                .created: String(item.created.timeIntervalSinceReferenceDate),
                .modified: String(item.modified.timeIntervalSinceReferenceDate),
            ].compactMapValues { $0 }
        ) { $1 }
    }

    static func item(from handle: UnsafeMutablePointer<SecretItem>) throws -> KeychainItem {
        let table = secret_item_get_attributes(handle)
        defer { if let table { g_hash_table_unref(table) } }
        var attributes: [Attribute: String] = [:]
        if let table {
            var iterator = GHashTableIter()
            g_hash_table_iter_init(&iterator, table)
            var key: gpointer?
            var value: gpointer?
            while g_hash_table_iter_next(&iterator, &key, &value) != 0 {
                guard let key, let value else { continue }
                guard let name = Attribute(rawValue: String(cString: key.assumingMemoryBound(to: CChar.self)))
                else { continue }
                attributes[name] = String(cString: value.assumingMemoryBound(to: CChar.self))
            }
        }
        func corrupted(_ what: String) -> KeychainError {
            KeychainError(.corrupted, "a Secret Service item of schema \(schemaName) has \(what)")
        }
        guard let itemClass = attributes[.itemClass].flatMap(ItemClass.init(rawValue:)) else {
            throw corrupted("no valid class")
        }
        let accessibility = attributes[.accessibility].flatMap(Accessibility.init(rawValue:)) ?? .whenUnlocked
        // Dates are metadata: an item another client stored without them reads as made at the reference date.
        let created = Date(timeIntervalSinceReferenceDate: attributes[.created].flatMap(Double.init) ?? 0)
        let modified = Date(timeIntervalSinceReferenceDate: attributes[.modified].flatMap(Double.init) ?? 0)
        var keyType: KeychainKeyType?
        if let raw = attributes[.keyType] {
            guard let type = KeychainKeyType(rawValue: raw) else { throw corrupted("an unknown key type") }
            keyType = type
        }
        let item = KeychainItem(
            itemClass: itemClass, service: attributes[.service], account: attributes[.account],
            applicationTag: attributes[.applicationTag], keyType: keyType, label: attributes[.label],
            comment: attributes[.comment], accessGroup: attributes[.accessGroup],
            accessibility: accessibility, synchronizable: attributes[.synchronizable] == "1",
            created: created, modified: modified)
        do { try ItemStore.validate(item) } catch { throw corrupted("no primary key") }
        return item
    }

    /// What the desktop's keyring manager shows.
    static func displayLabel(_ item: KeychainItem) -> String {
        if let label = item.label { return label }
        switch item.itemClass {
        case .genericPassword: return "\(item.service ?? "") (\(item.account ?? ""))"
        case .key: return "\(item.keyType?.rawValue ?? "") key \(item.applicationTag ?? "")"
        }
    }

    // MARK: libsecret and GLib plumbing

    func serialised<T: Sendable>(_ body: () throws -> T) throws -> T {
        try Self.lock.withLock { operations in
            operations += 1
            return try crossProcessSerialised(body)
        }
    }

    func crossProcessSerialised<T>(_ body: () throws -> T) throws -> T {
        var descriptor: Int32 = -1
        if let crossProcessLockPath {
            descriptor = open(crossProcessLockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if descriptor >= 0 {
                while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
            }
        }
        defer { if descriptor >= 0 { close(descriptor) } }
        return try body()
    }

    /// A string → string table that owns copies of its keys and values.
    static func table(_ attributes: [Attribute: String]) -> OpaquePointer {
        let table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)!
        for (key, value) in attributes {
            g_hash_table_insert(
                table, UnsafeMutableRawPointer(g_strdup(key.rawValue)), UnsafeMutableRawPointer(g_strdup(value)))
        }
        return table
    }

    static func value(_ data: SecretBytes) -> OpaquePointer {
        // secret_value_new copies the bytes.
        data.withUnsafeBytes { bytes in
            guard let start = bytes.baseAddress, !bytes.isEmpty else {
                return secret_value_new("", 0, "application/octet-stream")
            }
            return secret_value_new(start.assumingMemoryBound(to: CChar.self), bytes.count, "application/octet-stream")
        }
    }

    static func keychainError(_ error: UnsafeMutablePointer<GError>?, doing what: String) -> KeychainError {
        guard let error else { return KeychainError(.io, "the Secret Service could not \(what)") }
        defer { g_error_free(error) }
        let message = error.pointee.message.map { String(cString: $0) } ?? "no reason given"
        if error.pointee.domain == secret_error_get_quark() {
            switch error.pointee.code {
            case Int32(SECRET_ERROR_IS_LOCKED.rawValue): return lockedError
            case Int32(SECRET_ERROR_NO_SUCH_OBJECT.rawValue):
                return KeychainError(.itemNotFound, "the Secret Service could not \(what): \(message)")
            case Int32(SECRET_ERROR_ALREADY_EXISTS.rawValue):
                return KeychainError(.duplicateItem, "the Secret Service could not \(what): \(message)")
            default: break
            }
        }
        return KeychainError(.io, "the Secret Service could not \(what): \(message)")
    }
}
#endif
