#if canImport(Security)
import Coffer
import Crypto
import Foundation
import Security

// AppleKeychain, continued: reading items back from SecItemCopyMatching's
// attribute dictionaries, and mapping Security's status codes onto
// KeychainError.
extension AppleKeychain {
    // MARK: Reading items back

    struct Record {
        var item: KeychainItem
        /// Names exactly this item (by its persistent reference).
        var persistentQuery: [CFString: Any]
    }

    func records(_ query: KeychainQuery) throws -> [Record] {
        var found: [Record] = []
        for (type, dictionary) in places(query) {
            var search = dictionary
            search[kSecReturnAttributes] = true
            search[kSecReturnPersistentRef] = true
            search[kSecMatchLimit] = kSecMatchLimitAll
            if dictionary[kSecAttrSynchronizable] == nil { search[kSecAttrSynchronizable] = kSecAttrSynchronizableAny }
            var result: CFTypeRef?
            let status = SecItemCopyMatching(search as CFDictionary, &result)
            if status == errSecItemNotFound { continue }
            try Self.check(status, doing: "search the keychain")
            for attributes in (result as? [[String: Any]]) ?? [] {
                guard let item = item(from: attributes, query: query, keyType: type), query.matches(item),
                    let reference = attributes[kSecValuePersistentRef as String] as? Data
                else { continue }
                var exact = base(item.itemClass, keyType: item.keyType)
                exact[kSecValuePersistentRef] = reference
                exact[kSecAttrSynchronizable] = kSecAttrSynchronizableAny
                found.append(Record(item: item, persistentQuery: exact))
            }
        }
        return found
    }

    func item(from attributes: [String: Any], query: KeychainQuery, keyType: KeychainKeyType?) -> KeychainItem? {
        func string(_ key: CFString) -> String? { attributes[key as String] as? String }
        let group = useDataProtectionKeychain ? string(kSecAttrAccessGroup) : nil
        let created = attributes[kSecAttrCreationDate as String] as? Date ?? Date(timeIntervalSinceReferenceDate: 0)
        let modified = attributes[kSecAttrModificationDate as String] as? Date ?? created
        let accessibility = Self.accessibility(attributes[kSecAttrAccessible as String])
        let synchronizable = (attributes[kSecAttrSynchronizable as String] as? Bool) ?? false
        switch query.itemClass {
        case .genericPassword:
            // Keys kept as generic passwords (service coffer.key.…) are not password items.
            guard let service = string(kSecAttrService), let account = string(kSecAttrAccount),
                let name = unstored(service),
                !(namespace == nil && useDataProtectionKeychain && name.name.hasPrefix("coffer.key."))
            else { return nil }
            return KeychainItem(
                itemClass: .genericPassword, service: name.name, account: account, applicationTag: nil, keyType: nil,
                label: string(kSecAttrLabel), comment: string(kSecAttrComment), accessGroup: group ?? name.group,
                accessibility: accessibility, synchronizable: synchronizable, created: created, modified: modified)
        case .key:
            let tagValue: String?
            var type = keyType
            if let keyType, !Self.isSecKey(keyType) {
                tagValue = string(kSecAttrAccount)
            } else {
                tagValue = (attributes[kSecAttrApplicationTag as String] as? Data).map {
                    String(decoding: $0, as: UTF8.self)
                }
                if type == nil {
                    // kSecAttrKeyType comes back as a string ("73") or a number (73).
                    let secType = attributes[kSecAttrKeyType as String].map { "\($0)" }
                    let bits = (attributes[kSecAttrKeySizeInBits as String] as? Int) ?? 0
                    type = [KeychainKeyType.p256, .rsa2048, .rsa3072, .rsa4096].first {
                        Self.secKeyType($0).type as String == secType && Self.secKeyType($0).bits == bits
                    }
                }
            }
            guard let tagValue, let type, let tag = unstored(tagValue) else { return nil }
            return KeychainItem(
                itemClass: .key, service: nil, account: nil, applicationTag: tag.name, keyType: type,
                label: string(kSecAttrLabel),
                comment: string(kSecAttrComment), accessGroup: group ?? tag.group, accessibility: accessibility,
                synchronizable: synchronizable, created: created, modified: modified)
        }
    }

    func secKey(_ record: Record) throws -> SecKey {
        var exact = record.persistentQuery
        exact[kSecReturnRef] = true
        var result: CFTypeRef?
        try Self.check(SecItemCopyMatching(exact as CFDictionary, &result), doing: "fetch the key")
        guard let result, CFGetTypeID(result) == SecKeyGetTypeID() else {
            throw KeychainError(.corrupted, "the keychain returned no key")
        }
        return result as! SecKey  // swiftlint:disable:this force_cast (checked by type ID above)
    }

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

    // MARK: Errors

    static func check(_ status: OSStatus, doing what: String) throws {
        guard status != errSecSuccess else { return }
        let message = (SecCopyErrorMessageString(status, nil) as String?) ?? "OSStatus \(status)"
        switch status {
        case errSecItemNotFound: throw KeychainError(.itemNotFound, "no item matches")
        case errSecDuplicateItem:
            throw KeychainError(.duplicateItem, "could not \(what): an item with the same primary key exists")
        case errSecInteractionNotAllowed:
            throw KeychainError(.interactionNotAllowed, "could not \(what): the keychain is locked (\(message))")
        case errSecAuthFailed, errSecUserCanceled:
            throw KeychainError(.authenticationFailed, "could not \(what): \(message)")
        case errSecDecode: throw KeychainError(.corrupted, "could not \(what): \(message)")
        default: throw KeychainError(.io, "could not \(what): \(message) (OSStatus \(status))")
        }
    }

    static func error(_ error: Unmanaged<CFError>?, doing what: String) -> KeychainError {
        guard let error = error?.takeRetainedValue() else { return KeychainError(.io, "could not \(what)") }
        let code = OSStatus(CFErrorGetCode(error))
        do { try check(code, doing: what) } catch let mapped as KeychainError where mapped.code != .io {
            return mapped
        } catch {}
        return KeychainError(.io, "could not \(what): \(CFErrorCopyDescription(error) as String? ?? "no reason given")")
    }
}
#endif
