#if canImport(Security)
import Coffer
import Crypto
import Foundation
import Security

/// The Security framework as a `SecItemBackend`: each `SecItemAttribute`
/// and `SecItemValue` becomes its kSec… constant, and Security's answers
/// come back the same way. Security is thread-safe; this holds one flag.
struct SecurityFrameworkItems: SecItemBackend {
    let useDataProtectionKeychain: Bool

    static func constant(_ attribute: SecItemAttribute) -> CFString {
        switch attribute {
        case .itemClass: kSecClass
        case .service: kSecAttrService
        case .account: kSecAttrAccount
        case .applicationTag: kSecAttrApplicationTag
        case .keyType: kSecAttrKeyType
        case .keySizeInBits: kSecAttrKeySizeInBits
        case .keyClass: kSecAttrKeyClass
        case .label: kSecAttrLabel
        case .comment: kSecAttrComment
        case .accessGroup: kSecAttrAccessGroup
        case .accessible: kSecAttrAccessible
        case .synchronizable: kSecAttrSynchronizable
        case .creationDate: kSecAttrCreationDate
        case .modificationDate: kSecAttrModificationDate
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

    static func value(_ value: SecItemValue) -> Any {
        switch value {
        case .string(let string): string
        case .data(let bytes): Data(bytes)
        case .int(let number): number
        case .bool(let flag): flag
        case .date(let date): date
        case .genericPasswordClass: kSecClassGenericPassword
        case .keyClass: kSecClassKey
        case .privateKeyClass: kSecAttrKeyClassPrivate
        case .ecPrimeRandom: kSecAttrKeyTypeECSECPrimeRandom
        case .rsa: kSecAttrKeyTypeRSA
        case .accessibility(let accessibility): accessible(accessibility)
        case .synchronizableAny: kSecAttrSynchronizableAny
        }
    }

    /// A query or attribute dictionary for Security.
    func dictionary(_ attributes: SecItemAttributes, query: Bool = true) -> [CFString: Any] {
        var dictionary: [CFString: Any] = [:]
        if query && useDataProtectionKeychain { dictionary[kSecUseDataProtectionKeychain] = true }
        for (attribute, value) in attributes { dictionary[Self.constant(attribute)] = Self.value(value) }
        return dictionary
    }

    /// Security's attribute dictionary as `SecItemAttributes`.
    static func attributes(_ result: [String: Any]) -> SecItemAttributes {
        var attributes: SecItemAttributes = [:]
        func raw(_ attribute: SecItemAttribute) -> Any? { result[constant(attribute) as String] }
        for attribute in [SecItemAttribute.service, .account, .label, .comment, .accessGroup] {
            if let string = raw(attribute) as? String { attributes[attribute] = .string(string) }
        }
        if let tag = raw(.applicationTag) as? Data { attributes[.applicationTag] = .data(Array(tag)) }
        // kSecAttrKeyType comes back as a string ("73") or a number (73).
        if let type = raw(.keyType).map({ "\($0)" }) {
            if type == kSecAttrKeyTypeECSECPrimeRandom as String { attributes[.keyType] = .ecPrimeRandom }
            if type == kSecAttrKeyTypeRSA as String { attributes[.keyType] = .rsa }
        }
        if let bits = raw(.keySizeInBits) as? Int { attributes[.keySizeInBits] = .int(bits) }
        if let value = raw(.accessible) as? String,
            let accessibility = Accessibility.allCases.first(where: { accessible($0) as String == value })
        {
            attributes[.accessible] = .accessibility(accessibility)
        }
        if let flag = raw(.synchronizable) as? Bool { attributes[.synchronizable] = .bool(flag) }
        if let date = raw(.creationDate) as? Date { attributes[.creationDate] = .date(date) }
        if let date = raw(.modificationDate) as? Date { attributes[.modificationDate] = .date(date) }
        return attributes
    }

    /// Names exactly the item `reference` points at.
    func exact(_ reference: [UInt8], base: SecItemAttributes) -> [CFString: Any] {
        var query = dictionary(base)
        query[kSecValuePersistentRef] = Data(reference)
        query[kSecAttrSynchronizable] = kSecAttrSynchronizableAny
        return query
    }

    // MARK: SecItemBackend

    func add(_ attributes: SecItemAttributes, value: [UInt8]) throws {
        var item = dictionary(attributes)
        if attributes[.itemClass] == .keyClass {
            // The keychain keeps SecKeys: PKCS#8 in, SecKey's external representation to make one.
            let external: [UInt8]
            do { external = try KeyFiles.encode(try KeyFiles.privateKey(value), as: .apple) } catch {
                throw KeychainError(.invalidArgument, "a key item holds a PKCS#8 private key")
            }
            var error: Unmanaged<CFError>?
            let options: [CFString: Any] = [
                kSecAttrKeyType: Self.value(attributes[.keyType] ?? .ecPrimeRandom),
                kSecAttrKeyClass: kSecAttrKeyClassPrivate,
                kSecAttrKeySizeInBits: Self.value(attributes[.keySizeInBits] ?? .int(256)),
            ]
            guard let key = SecKeyCreateWithData(Data(external) as CFData, options as CFDictionary, &error) else {
                throw Self.error(error, doing: "make a SecKey from the key")
            }
            item[kSecValueRef] = key
        } else {
            item[kSecValueData] = Data(value)
        }
        try Self.check(SecItemAdd(item as CFDictionary, nil), doing: "add the item")
    }

    func search(_ query: SecItemAttributes) throws -> [SecItemMatch] {
        var search = dictionary(query)
        search[kSecReturnAttributes] = true
        search[kSecReturnPersistentRef] = true
        search[kSecMatchLimit] = kSecMatchLimitAll
        var result: CFTypeRef?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        if status == errSecItemNotFound { return [] }
        try Self.check(status, doing: "search the keychain")
        return ((result as? [[String: Any]]) ?? []).compactMap { found in
            guard let reference = found[kSecValuePersistentRef as String] as? Data else { return nil }
            return SecItemMatch(attributes: Self.attributes(found), reference: Array(reference))
        }
    }

    func data(_ reference: [UInt8], base: SecItemAttributes) throws -> [UInt8] {
        var query = exact(reference, base: base)
        query[kSecReturnData] = true
        query[kSecMatchLimit] = kSecMatchLimitOne
        var result: CFTypeRef?
        try Self.check(SecItemCopyMatching(query as CFDictionary, &result), doing: "read the item")
        guard let data = result as? Data else { throw KeychainError(.corrupted, "the keychain returned no data") }
        return Array(data)
    }

    func secKey(_ reference: [UInt8], base: SecItemAttributes) throws -> SecKey {
        var query = exact(reference, base: base)
        query[kSecReturnRef] = true
        var result: CFTypeRef?
        try Self.check(SecItemCopyMatching(query as CFDictionary, &result), doing: "fetch the key")
        guard let result, CFGetTypeID(result) == SecKeyGetTypeID() else {
            throw KeychainError(.corrupted, "the keychain returned no key")
        }
        return result as! SecKey  // checked by type ID above
    }

    func exportPrivateKey(_ reference: [UInt8], base: SecItemAttributes) throws -> [UInt8] {
        var error: Unmanaged<CFError>?
        guard let external = SecKeyCopyExternalRepresentation(try secKey(reference, base: base), &error) as Data?
        else {
            throw Self.error(error, doing: "export the key (a Secure Enclave key never leaves it)")
        }
        return try KeyFiles.encode(try KeyFiles.privateKey(Array(external)), as: .pkcs8, der: true)
    }

    func update(_ reference: [UInt8], base: SecItemAttributes, with attributes: SecItemAttributes, value: [UInt8]?)
        throws
    {
        var changes = dictionary(attributes, query: false)
        if let value { changes[kSecValueData] = Data(value) }
        try Self.check(
            SecItemUpdate(exact(reference, base: base) as CFDictionary, changes as CFDictionary),
            doing: "update the item")
    }

    func delete(_ reference: [UInt8], base: SecItemAttributes) throws {
        try Self.check(SecItemDelete(exact(reference, base: base) as CFDictionary), doing: "delete the item")
    }

    // MARK: Errors

    static func check(_ status: OSStatus, doing what: String) throws {
        let message = (SecCopyErrorMessageString(status, nil) as String?) ?? "OSStatus \(status)"
        if let error = KeychainError(secStatus: status, doing: what, message: message) { throw error }
    }

    static func error(_ error: Unmanaged<CFError>?, doing what: String) -> KeychainError {
        guard let error = error?.takeRetainedValue() else { return KeychainError(.io, "could not \(what)") }
        let code = OSStatus(CFErrorGetCode(error))
        if let mapped = KeychainError(secStatus: code, doing: what, message: ""), mapped.code != .io { return mapped }
        return KeychainError(.io, "could not \(what): \(CFErrorCopyDescription(error) as String? ?? "no reason given")")
    }

    /// The public key of a SecKey private key.
    static func publicKey(of privateKey: SecKey) throws -> AsymmetricPublicKey {
        var error: Unmanaged<CFError>?
        guard let publicKey = SecKeyCopyPublicKey(privateKey),
            let external = SecKeyCopyExternalRepresentation(publicKey, &error) as Data?
        else {
            throw Self.error(error, doing: "read the public key")
        }
        do { return try KeyFiles.publicKey(Array(external)) } catch {
            throw KeychainError(.corrupted, "the keychain's public key does not parse")
        }
    }
}
#endif
