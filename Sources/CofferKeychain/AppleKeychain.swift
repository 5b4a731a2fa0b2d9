#if canImport(Security)
import Coffer
import Crypto
import Foundation
import Security

/// Apple's own keychain behind the `Keychain` protocol: a thin layer over
/// SecItemAdd / SecItemCopyMatching / SecItemUpdate / SecItemDelete and
/// SecKeyCreateRandomKey (docs/keychain.md).
///
/// - Password items are `kSecClassGenericPassword` items (service, account).
/// - P-256 and RSA keys are `kSecClassKey` private keys (application tag,
///   key type and size); `secureEnclave` makes P-256 keys inside the Secure
///   Enclave (`kSecAttrTokenIDSecureEnclave`, `.privateKeyUsage`), which
///   never leave it: their agreement runs there, and export fails.
/// - X25519 and 256-bit symmetric keys, which SecKey does not hold, are
///   generic passwords of service `coffer.key.x25519` / `coffer.key.symmetric256`
///   with the tag as account, as Apple advises for CryptoKit keys.
/// - `useDataProtectionKeychain` sets `kSecUseDataProtectionKeychain` (the
///   iOS-style keychain on macOS; it needs a signed app with a
///   keychain-access-groups entitlement). Without it, on the file-based
///   macOS keychain that ignores access groups, the access group is kept in
///   the stored service or tag instead, so namespaces still hold.
/// - `namespace`, when set, prefixes every stored service and tag, so that
///   tests (and previews) never touch the user's real items.
public final class AppleKeychain: Keychain, @unchecked Sendable {  // immutable after init; Security is thread-safe
    public let useDataProtectionKeychain: Bool
    public let secureEnclave: Bool
    public let namespace: String?

    public init(useDataProtectionKeychain: Bool = true, secureEnclave: Bool = false, namespace: String? = nil) {
        self.useDataProtectionKeychain = useDataProtectionKeychain
        self.secureEnclave = secureEnclave
        self.namespace = namespace
    }

    static let separator = "\u{1F}"  // unit separator: never in a service or tag people type

    // MARK: Where an item lives

    /// The stored form of a service or tag: prefixed by the namespace, and
    /// by the access group where the keychain ignores access groups.
    func stored(_ name: String, group: String?) -> String {
        var parts: [String] = []
        if let namespace { parts.append(namespace) }
        if !useDataProtectionKeychain { parts.append(group ?? "") }
        return (parts + [name]).joined(separator: Self.separator)
    }

    /// The name and folded access group back from the stored form, or nil if it is not one of ours.
    func unstored(_ value: String) -> (name: String, group: String?)? {
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

    static func isSecKey(_ type: KeychainKeyType) -> Bool { type != .x25519 && type != .symmetric256 }

    static func keyService(_ type: KeychainKeyType) -> String { "coffer.key." + type.rawValue }

    static func secKeyType(_ type: KeychainKeyType) -> (type: CFString, bits: Int) {
        switch type.kind {
        case .p256: (kSecAttrKeyTypeECSECPrimeRandom, 256)
        case .rsa2048: (kSecAttrKeyTypeRSA, 2048)
        case .rsa3072: (kSecAttrKeyTypeRSA, 3072)
        case .rsa4096: (kSecAttrKeyTypeRSA, 4096)
        case .x25519, .symmetric256: (kSecAttrKeyTypeECSECPrimeRandom, 0)  // not SecKeys; never asked
        }
    }

    static func accessible(_ accessibility: Accessibility) -> CFString {
        switch accessibility.kind {
        case .whenUnlocked: kSecAttrAccessibleWhenUnlocked
        case .afterFirstUnlock: kSecAttrAccessibleAfterFirstUnlock
        case .whenUnlockedThisDeviceOnly: kSecAttrAccessibleWhenUnlockedThisDeviceOnly
        case .afterFirstUnlockThisDeviceOnly: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        case .whenPasscodeSetThisDeviceOnly: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly
        }
    }

    static func accessibility(_ value: Any?) -> Accessibility {
        guard let value = value as? String else { return .whenUnlocked }
        return Accessibility.allCases.first { accessible($0) as String == value } ?? .whenUnlocked
    }

    /// The base query of one storage place: the class and, for keys kept as
    /// generic passwords, their service.
    func base(_ itemClass: ItemClass, keyType: KeychainKeyType?) -> [CFString: Any] {
        var query: [CFString: Any] = [:]
        if useDataProtectionKeychain { query[kSecUseDataProtectionKeychain] = true }
        switch (itemClass, keyType) {
        case (.genericPassword, _):
            query[kSecClass] = kSecClassGenericPassword
        case (.key, let type?) where !Self.isSecKey(type):
            query[kSecClass] = kSecClassGenericPassword
        case (.key, let type):
            query[kSecClass] = kSecClassKey
            query[kSecAttrKeyClass] = kSecAttrKeyClassPrivate
            if let type {
                let (secType, bits) = Self.secKeyType(type)
                query[kSecAttrKeyType] = secType
                query[kSecAttrKeySizeInBits] = bits
            }
        }
        return query
    }

    /// Every (storage place, query) a Coffer query names: a key query
    /// without a type searches SecKeys and the generic-password keys.
    func places(_ query: KeychainQuery) -> [(type: KeychainKeyType?, query: [CFString: Any])] {
        let types: [KeychainKeyType?]
        switch query.itemClass {
        case .genericPassword: types = [nil]
        case .key: types = query.keyType.map { [$0] } ?? [nil, .x25519, .symmetric256]
        }
        return types.map { type in
            var dictionary = base(query.itemClass, keyType: type)
            if let label = query.label { dictionary[kSecAttrLabel] = label }
            if useDataProtectionKeychain, let group = query.accessGroup { dictionary[kSecAttrAccessGroup] = group }
            // The stored service or tag is known exactly unless the access
            // group is folded into it and the query leaves the group open;
            // then every item is read and matched here.
            let exact = useDataProtectionKeychain || query.accessGroup != nil
            switch (query.itemClass, type) {
            case (.genericPassword, _):
                if let service = query.service, exact {
                    dictionary[kSecAttrService] = stored(service, group: query.accessGroup)
                }
                if let account = query.account { dictionary[kSecAttrAccount] = account }
            case (.key, let type?) where !Self.isSecKey(type):
                dictionary[kSecAttrService] = Self.keyService(type)
                if let tag = query.applicationTag, exact {
                    dictionary[kSecAttrAccount] = stored(tag, group: query.accessGroup)
                }
            case (.key, _):
                if let tag = query.applicationTag, exact {
                    dictionary[kSecAttrApplicationTag] = Data(stored(tag, group: query.accessGroup).utf8)
                }
            }
            return (type, dictionary)
        }
    }

    // MARK: Keychain

    public func add(_ item: KeychainItem, data: SecretBytes) throws {
        try ItemStore.validate(item)
        var attributes = base(item.itemClass, keyType: item.keyType)
        if let label = item.label { attributes[kSecAttrLabel] = label }
        if let comment = item.comment, item.keyType.map(Self.isSecKey) != true { attributes[kSecAttrComment] = comment }
        if useDataProtectionKeychain, let group = item.accessGroup { attributes[kSecAttrAccessGroup] = group }
        attributes[kSecAttrAccessible] = Self.accessible(item.accessibility)
        if item.synchronizable { attributes[kSecAttrSynchronizable] = true }
        switch (item.itemClass, item.keyType) {
        case (.genericPassword, _):
            attributes[kSecAttrService] = stored(item.service!, group: item.accessGroup)
            attributes[kSecAttrAccount] = item.account!
            attributes[kSecValueData] = Data(data.revealed())
        case (.key, let type?) where !Self.isSecKey(type):
            attributes[kSecAttrService] = Self.keyService(type)
            attributes[kSecAttrAccount] = stored(item.applicationTag!, group: item.accessGroup)
            attributes[kSecValueData] = Data(data.revealed())
        case (.key, let type):
            // The keychain keeps SecKeys: PKCS#8 in, SecKey's external representation to make one.
            let (secType, bits) = Self.secKeyType(type!)
            let external: [UInt8]
            do { external = try KeyFiles.encode(try KeyFiles.privateKey(data.revealed()), as: .apple) } catch {
                throw KeychainError(.invalidArgument, "a \(type!.rawValue) key item holds a PKCS#8 private key")
            }
            var error: Unmanaged<CFError>?
            let options: [CFString: Any] = [
                kSecAttrKeyType: secType, kSecAttrKeyClass: kSecAttrKeyClassPrivate, kSecAttrKeySizeInBits: bits,
            ]
            guard let key = SecKeyCreateWithData(Data(external) as CFData, options as CFDictionary, &error) else {
                throw Self.error(error, doing: "make a SecKey from the key")
            }
            attributes[kSecAttrApplicationTag] = Data(stored(item.applicationTag!, group: item.accessGroup).utf8)
            attributes[kSecValueRef] = key
        }
        try Self.check(SecItemAdd(attributes as CFDictionary, nil), doing: "add the item")
    }

    public func copyMatching(_ query: KeychainQuery) throws -> [KeychainItem] {
        let found = try records(query).map(\.item)
        guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
        return found
    }

    public func copyData(_ query: KeychainQuery) throws -> SecretBytes {
        let found = try records(query)
        guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
        guard found.count == 1 else {
            throw KeychainError(.invalidArgument, "\(found.count) items match; name exactly one")
        }
        let record = found[0]
        if let type = record.item.keyType, Self.isSecKey(type) {
            let key = try secKey(record)
            var error: Unmanaged<CFError>?
            guard let external = SecKeyCopyExternalRepresentation(key, &error) as Data? else {
                throw Self.error(error, doing: "export the key (a Secure Enclave key never leaves it)")
            }
            return SecretBytes(try KeyFiles.encode(try KeyFiles.privateKey(Array(external)), as: .pkcs8, der: true))
        }
        var exact = record.persistentQuery
        exact[kSecReturnData] = true
        exact[kSecMatchLimit] = kSecMatchLimitOne
        var result: CFTypeRef?
        try Self.check(SecItemCopyMatching(exact as CFDictionary, &result), doing: "read the item")
        guard let data = result as? Data else { throw KeychainError(.corrupted, "the keychain returned no data") }
        return SecretBytes(data)
    }

    public func update(_ query: KeychainQuery, with changes: KeychainChanges) throws {
        let found = try records(query)
        guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
        if changes.data != nil, found.contains(where: { $0.item.keyType.map(Self.isSecKey) == true }) {
            throw KeychainError(
                .invalidArgument, "a SecKey's bytes are not updated: delete the key and add or generate another")
        }
        // Apple's update refuses collisions itself (errSecDuplicateItem), one
        // item at a time; check all first so that a refused update changes nothing.
        let now = Date()
        let after = try found.map { try changes.applied(to: $0.item, now: now) }
        var others: [KeychainItem] = []
        if let all = try? records(KeychainQuery(itemClass: query.itemClass)) {
            others = all.map(\.item).filter { item in !found.contains { $0.item == item } }
        }
        try ItemStore.checkNoCollisions(others + after)
        for (record, item) in zip(found, after) {
            var attributes: [CFString: Any] = [:]
            if let label = item.label { attributes[kSecAttrLabel] = label }
            if changes.accessibility != nil { attributes[kSecAttrAccessible] = Self.accessible(item.accessibility) }
            if changes.synchronizable != nil { attributes[kSecAttrSynchronizable] = item.synchronizable }
            switch (item.itemClass, item.keyType) {
            case (.genericPassword, _):
                if let comment = item.comment { attributes[kSecAttrComment] = comment }
                attributes[kSecAttrService] = stored(item.service!, group: item.accessGroup)
                attributes[kSecAttrAccount] = item.account!
            case (.key, let type?) where !Self.isSecKey(type):
                if let comment = item.comment { attributes[kSecAttrComment] = comment }
                attributes[kSecAttrAccount] = stored(item.applicationTag!, group: item.accessGroup)
            case (.key, _):
                attributes[kSecAttrApplicationTag] = Data(stored(item.applicationTag!, group: item.accessGroup).utf8)
            }
            if let data = changes.data { attributes[kSecValueData] = Data(data.revealed()) }
            try Self.check(
                SecItemUpdate(record.persistentQuery as CFDictionary, attributes as CFDictionary),
                doing: "update the item")
        }
    }

    public func delete(_ query: KeychainQuery) throws {
        let found = try records(query)
        guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
        for record in found {
            try Self.check(SecItemDelete(record.persistentQuery as CFDictionary), doing: "delete the item")
        }
    }
}
#endif
