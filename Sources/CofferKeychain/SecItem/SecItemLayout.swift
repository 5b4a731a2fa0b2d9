import Coffer
import Foundation

/// Where Coffer's items live in Apple's keychain, and how they are named:
/// the part of AppleKeychain that needs no Security framework.
///
/// - Password items are generic passwords (service, account).
/// - P-256 and RSA keys are private keys (application tag, key type and size).
/// - X25519 and 256-bit symmetric keys, which SecKey does not hold, are
///   generic passwords of service `coffer.key.x25519` / `coffer.key.symmetric256`
///   with the tag as account, as Apple advises for CryptoKit keys.
/// - Without the data protection keychain (the file-based macOS keychain
///   ignores access groups), the access group is folded into the stored
///   service or tag, so namespaces still hold.
/// - `namespace`, when set, prefixes every stored service and tag.
package struct SecItemLayout: Sendable {
    package let useDataProtectionKeychain: Bool
    package let namespace: String?

    package init(useDataProtectionKeychain: Bool, namespace: String?) {
        self.useDataProtectionKeychain = useDataProtectionKeychain
        self.namespace = namespace
    }

    static let separator = "\u{1F}"  // unit separator: never in a service or tag people type

    /// The stored form of a service or tag: prefixed by the namespace, and
    /// by the access group where the keychain ignores access groups.
    package func stored(_ name: String, group: String?) -> String {
        var parts: [String] = []
        if let namespace { parts.append(namespace) }
        if !useDataProtectionKeychain { parts.append(group ?? "") }
        return (parts + [name]).joined(separator: Self.separator)
    }

    /// The name and folded access group back from the stored form, or nil if it is not one of ours.
    package func unstored(_ value: String) -> (name: String, group: String?)? {
        var parts = value.components(separatedBy: Self.separator)
        if let namespace {
            guard parts.count > 1, parts.removeFirst() == namespace else { return nil }
        }
        var group: String?
        if !useDataProtectionKeychain {
            guard parts.count > 1 else { return nil }
            let folded = parts.removeFirst()
            group = folded.isEmpty ? nil : folded
        }
        return (parts.joined(separator: Self.separator), group)
    }

    package static func isSecKey(_ type: KeychainKeyType) -> Bool { type != .x25519 && type != .symmetric256 }

    static func keyService(_ type: KeychainKeyType) -> String { "coffer.key." + type.rawValue }

    /// SecKey's key type and size for the types SecKey holds.
    package static func secKeyType(_ type: KeychainKeyType) -> (type: SecItemValue, bits: Int) {
        switch type.kind {
        case .p256: (.ecPrimeRandom, 256)
        case .rsa2048: (.rsa, 2048)
        case .rsa3072: (.rsa, 3072)
        case .rsa4096: (.rsa, 4096)
        case .x25519, .symmetric256: (.ecPrimeRandom, 0)  // not SecKeys; never asked
        }
    }

    /// The base query of one storage place: the class and, for private
    /// keys, the key class, type and size.
    package func base(_ itemClass: ItemClass, keyType: KeychainKeyType?) -> SecItemAttributes {
        switch (itemClass, keyType) {
        case (.genericPassword, _):
            return [.itemClass: .genericPasswordClass]
        case (.key, let type?) where !Self.isSecKey(type):
            return [.itemClass: .genericPasswordClass]
        case (.key, let type):
            var query: SecItemAttributes = [.itemClass: .keyClass, .keyClass: .privateKeyClass]
            if let type {
                let (secType, bits) = Self.secKeyType(type)
                query[.keyType] = secType
                query[.keySizeInBits] = .int(bits)
            }
            return query
        }
    }

    /// Every (storage place, query) a Coffer query names: a key query
    /// without a type searches SecKeys and the generic-password keys.
    package func places(_ query: KeychainQuery) -> [(type: KeychainKeyType?, query: SecItemAttributes)] {
        let types: [KeychainKeyType?]
        switch query.itemClass {
        case .genericPassword: types = [nil]
        case .key: types = query.keyType.map { [$0] } ?? [nil, .x25519, .symmetric256]
        }
        return types.map { type in
            var dictionary = base(query.itemClass, keyType: type)
            if let label = query.label { dictionary[.label] = .string(label) }
            if useDataProtectionKeychain, let group = query.accessGroup { dictionary[.accessGroup] = .string(group) }
            // The stored service or tag is known exactly unless the access
            // group is folded into it and the query leaves the group open;
            // then every item is read and matched here.
            let exact = useDataProtectionKeychain || query.accessGroup != nil
            switch (query.itemClass, type) {
            case (.genericPassword, _):
                if let service = query.service, exact {
                    dictionary[.service] = .string(stored(service, group: query.accessGroup))
                }
                if let account = query.account { dictionary[.account] = .string(account) }
            case (.key, let type?) where !Self.isSecKey(type):
                dictionary[.service] = .string(Self.keyService(type))
                if let tag = query.applicationTag, exact {
                    dictionary[.account] = .string(stored(tag, group: query.accessGroup))
                }
            case (.key, _):
                if let tag = query.applicationTag, exact {
                    dictionary[.applicationTag] = .data(Array(stored(tag, group: query.accessGroup).utf8))
                }
            }
            return (type, dictionary)
        }
    }

    /// The attributes `add` stores for `item` (the value goes beside them).
    package func attributes(adding item: KeychainItem) -> SecItemAttributes {
        var attributes = base(item.itemClass, keyType: item.keyType)
        if let label = item.label { attributes[.label] = .string(label) }
        if let comment = item.comment, item.keyType.map(Self.isSecKey) != true {
            attributes[.comment] = .string(comment)
        }
        if useDataProtectionKeychain, let group = item.accessGroup { attributes[.accessGroup] = .string(group) }
        attributes[.accessible] = .accessibility(item.accessibility)
        if item.synchronizable { attributes[.synchronizable] = .bool(true) }
        attributes.merge(naming(item)) { $1 }
        return attributes
    }

    /// The attributes that name `item` in its storage place: service and
    /// account, or the tag (as account for generic-password keys).
    package func naming(_ item: KeychainItem) -> SecItemAttributes {
        switch (item.itemClass, item.keyType) {
        case (.genericPassword, _):
            [.service: .string(stored(item.service!, group: item.accessGroup)), .account: .string(item.account!)]
        case (.key, let type?) where !Self.isSecKey(type):
            [
                .service: .string(Self.keyService(type)),
                .account: .string(stored(item.applicationTag!, group: item.accessGroup)),
            ]
        case (.key, _):
            [.applicationTag: .data(Array(stored(item.applicationTag!, group: item.accessGroup).utf8))]
        }
    }

    /// The attributes `update` writes for an item changed to `item`.
    package func attributes(updating item: KeychainItem, changes: KeychainChanges) -> SecItemAttributes {
        var attributes: SecItemAttributes = [:]
        if let label = item.label { attributes[.label] = .string(label) }
        if changes.accessibility != nil { attributes[.accessible] = .accessibility(item.accessibility) }
        if changes.synchronizable != nil { attributes[.synchronizable] = .bool(item.synchronizable) }
        if let comment = item.comment, item.keyType.map(Self.isSecKey) != true {
            attributes[.comment] = .string(comment)
        }
        attributes.merge(naming(item)) { $1 }
        return attributes
    }

    /// The Coffer item an attribute dictionary describes, or nil when it is
    /// not one of ours (another namespace, or a key kept as a generic
    /// password when passwords were asked for).
    package func item(from attributes: SecItemAttributes, itemClass: ItemClass, keyType: KeychainKeyType?)
        -> KeychainItem?
    {
        let group = useDataProtectionKeychain ? attributes[.accessGroup]?.string : nil
        let created: Date
        if case .date(let date)? = attributes[.creationDate] {
            created = date
        } else {
            created = Date(timeIntervalSinceReferenceDate: 0)
        }
        let modified: Date
        if case .date(let date)? = attributes[.modificationDate] { modified = date } else { modified = created }
        var accessibility = Accessibility.whenUnlocked
        if case .accessibility(let value)? = attributes[.accessible] { accessibility = value }
        let synchronizable = attributes[.synchronizable] == .bool(true)
        let label = attributes[.label]?.string
        let comment = attributes[.comment]?.string
        switch itemClass {
        case .genericPassword:
            // Keys kept as generic passwords (service coffer.key.…) are not password items.
            guard let service = attributes[.service]?.string, let account = attributes[.account]?.string,
                let name = unstored(service),
                !(namespace == nil && useDataProtectionKeychain && name.name.hasPrefix("coffer.key."))
            else { return nil }
            return KeychainItem(
                itemClass: .genericPassword, service: name.name, account: account, applicationTag: nil, keyType: nil,
                label: label, comment: comment, accessGroup: group ?? name.group, accessibility: accessibility,
                synchronizable: synchronizable, created: created, modified: modified)
        case .key:
            let tagValue: String?
            var type = keyType
            if let keyType, !Self.isSecKey(keyType) {
                tagValue = attributes[.account]?.string
            } else {
                tagValue = attributes[.applicationTag]?.bytes.map { String(decoding: $0, as: UTF8.self) }
                if type == nil {
                    let bits: Int
                    if case .int(let value)? = attributes[.keySizeInBits] { bits = value } else { bits = 0 }
                    type = [KeychainKeyType.p256, .rsa2048, .rsa3072, .rsa4096].first {
                        Self.secKeyType($0).type == attributes[.keyType] && Self.secKeyType($0).bits == bits
                    }
                }
            }
            guard let tagValue, let type, let tag = unstored(tagValue) else { return nil }
            return KeychainItem(
                itemClass: .key, service: nil, account: nil, applicationTag: tag.name, keyType: type, label: label,
                comment: comment, accessGroup: group ?? tag.group, accessibility: accessibility,
                synchronizable: synchronizable, created: created, modified: modified)
        }
    }
}
