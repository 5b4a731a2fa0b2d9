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
    private func stored(_ name: String, group: String?) -> String {
        var parts: [String] = []
        if let namespace { parts.append(namespace) }
        if !useDataProtectionKeychain { parts.append(group ?? "") }
        return (parts + [name]).joined(separator: Self.separator)
    }

    /// The name and folded access group back from the stored form, or nil if it is not one of ours.
    private func unstored(_ value: String) -> (name: String, group: String?)? {
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

    private static func isSecKey(_ type: KeychainKeyType) -> Bool { type != .x25519 && type != .symmetric256 }

    private static func keyService(_ type: KeychainKeyType) -> String { "coffer.key." + type.rawValue }

    private static func secKeyType(_ type: KeychainKeyType) -> (type: CFString, bits: Int) {
        switch type {
        case .p256: (kSecAttrKeyTypeECSECPrimeRandom, 256)
        case .rsa2048: (kSecAttrKeyTypeRSA, 2048)
        case .rsa3072: (kSecAttrKeyTypeRSA, 3072)
        case .rsa4096: (kSecAttrKeyTypeRSA, 4096)
        case .x25519, .symmetric256: (kSecAttrKeyTypeECSECPrimeRandom, 0)  // not SecKeys; never asked
        }
    }

    private static func accessible(_ accessibility: Accessibility) -> CFString {
        switch accessibility {
        case .whenUnlocked: kSecAttrAccessibleWhenUnlocked
        case .afterFirstUnlock: kSecAttrAccessibleAfterFirstUnlock
        case .whenUnlockedThisDeviceOnly: kSecAttrAccessibleWhenUnlockedThisDeviceOnly
        case .afterFirstUnlockThisDeviceOnly: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        case .whenPasscodeSetThisDeviceOnly: kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly
        }
    }

    private static func accessibility(_ value: Any?) -> Accessibility {
        guard let value = value as? String else { return .whenUnlocked }
        return Accessibility.allCases.first { accessible($0) as String == value } ?? .whenUnlocked
    }

    /// The base query of one storage place: the class and, for keys kept as
    /// generic passwords, their service.
    private func base(_ itemClass: ItemClass, keyType: KeychainKeyType?) -> [CFString: Any] {
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
    private func places(_ query: KeychainQuery) -> [(type: KeychainKeyType?, query: [CFString: Any])] {
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
                if let service = query.service, exact { dictionary[kSecAttrService] = stored(service, group: query.accessGroup) }
                if let account = query.account { dictionary[kSecAttrAccount] = account }
            case (.key, let type?) where !Self.isSecKey(type):
                dictionary[kSecAttrService] = Self.keyService(type)
                if let tag = query.applicationTag, exact { dictionary[kSecAttrAccount] = stored(tag, group: query.accessGroup) }
            case (.key, _):
                if let tag = query.applicationTag, exact { dictionary[kSecAttrApplicationTag] = Data(stored(tag, group: query.accessGroup).utf8) }
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
            let options: [CFString: Any] = [kSecAttrKeyType: secType, kSecAttrKeyClass: kSecAttrKeyClassPrivate, kSecAttrKeySizeInBits: bits]
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
        guard found.count == 1 else { throw KeychainError(.invalidArgument, "\(found.count) items match; name exactly one") }
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
            throw KeychainError(.invalidArgument, "a SecKey's bytes are not updated: delete the key and add or generate another")
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
            try Self.check(SecItemUpdate(record.persistentQuery as CFDictionary, attributes as CFDictionary), doing: "update the item")
        }
    }

    public func delete(_ query: KeychainQuery) throws {
        let found = try records(query)
        guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
        for record in found {
            try Self.check(SecItemDelete(record.persistentQuery as CFDictionary), doing: "delete the item")
        }
    }

    // MARK: Keys made and used inside the keychain

    @discardableResult
    public func generateKey(_ type: KeychainKeyType, tag: String, label: String?) throws -> AsymmetricPublicKey? {
        guard Self.isSecKey(type) else {
            // X25519 and symmetric keys: swift-crypto makes them, a generic password keeps them.
            let bytes: [UInt8]
            let publicKey: AsymmetricPublicKey?
            if type == .x25519 {
                let key = Curve25519.KeyAgreement.PrivateKey()
                bytes = try KeyFiles.encode(.x25519(key), as: .pkcs8, der: true)
                publicKey = .x25519(key.publicKey)
            } else {
                bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
                publicKey = nil
            }
            try add(.key(tag: tag, type: type, label: label), data: SecretBytes(bytes))
            return publicKey
        }
        if (try? records(.key(tag: tag, type: type)))?.isEmpty == false {
            throw KeychainError(.duplicateItem, "an item with the same tag and key type exists")
        }
        let (secType, bits) = Self.secKeyType(type)
        var privateAttributes: [CFString: Any] = [
            kSecAttrIsPermanent: true,
            kSecAttrApplicationTag: Data(stored(tag, group: nil).utf8),
        ]
        if let label { privateAttributes[kSecAttrLabel] = label }
        var attributes: [CFString: Any] = [kSecAttrKeyType: secType, kSecAttrKeySizeInBits: bits]
        if useDataProtectionKeychain { attributes[kSecUseDataProtectionKeychain] = true }
        if secureEnclave && type == .p256 {
            var error: Unmanaged<CFError>?
            guard let access = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .privateKeyUsage, &error) else {
                throw Self.error(error, doing: "make the Secure Enclave access control")
            }
            attributes[kSecAttrTokenID] = kSecAttrTokenIDSecureEnclave
            privateAttributes[kSecAttrAccessControl] = access
        } else {
            privateAttributes[kSecAttrAccessible] = kSecAttrAccessibleWhenUnlocked
        }
        attributes[kSecPrivateKeyAttrs] = privateAttributes
        var error: Unmanaged<CFError>?
        guard let privateKey = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
            throw Self.error(error, doing: "generate the \(type.rawValue) key")
        }
        return try Self.publicKey(of: privateKey)
    }

    public func publicKey(tag: String, type: KeychainKeyType) throws -> AsymmetricPublicKey {
        guard Self.isSecKey(type) else { return try exportPrivateKey(tag: tag, type: type).publicKey }
        let found = try records(.key(tag: tag, type: type))
        guard found.count == 1 else {
            throw KeychainError(found.isEmpty ? .itemNotFound : .invalidArgument, found.isEmpty ? "no item matches" : "\(found.count) items match")
        }
        return try Self.publicKey(of: try secKey(found[0]))
    }

    public func agree(tag: String, type: KeychainKeyType, peer: AsymmetricPublicKey, kdf: KeyAgreement.KDF = .x963SHA256,
                      size: Int = 32, sharedInfo: [UInt8] = []) throws -> SymmetricKey {
        guard type == .p256 else {
            guard type == .x25519 else { throw KeychainError(.invalidArgument, "key agreement needs a p256 or x25519 key, not \(type.rawValue)") }
            return try KeyAgreement.agree(privateKey: try exportPrivateKey(tag: tag, type: type), peer: peer, kdf: kdf, size: size, sharedInfo: sharedInfo)
        }
        guard case .p256(let peerKey) = peer else { throw KeychainError(.invalidArgument, "a P-256 key agrees with a P-256 peer, not \(peer.algorithm)") }
        let found = try records(.key(tag: tag, type: .p256))
        guard found.count == 1 else { throw KeychainError(found.isEmpty ? .itemNotFound : .invalidArgument, "\(found.count) items match") }
        let privateKey = try secKey(found[0])
        var error: Unmanaged<CFError>?
        let peerAttributes: [CFString: Any] = [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPublic]
        guard let peerSecKey = SecKeyCreateWithData(peerKey.x963Representation as CFData, peerAttributes as CFDictionary, &error) else {
            throw Self.error(error, doing: "read the peer's key")
        }
        let algorithm: SecKeyAlgorithm
        switch kdf {
        case .x963SHA1: algorithm = .ecdhKeyExchangeCofactorX963SHA1
        case .x963SHA256: algorithm = .ecdhKeyExchangeCofactorX963SHA256
        case .x963SHA384: algorithm = .ecdhKeyExchangeCofactorX963SHA384
        case .x963SHA512: algorithm = .ecdhKeyExchangeCofactorX963SHA512
        case .hkdfSHA256: algorithm = .ecdhKeyExchangeCofactor
        }
        let parameters: [CFString: Any] = kdf == .hkdfSHA256 ? [:] : [
            SecKeyKeyExchangeParameter.requestedSize.rawValue: size,
            SecKeyKeyExchangeParameter.sharedInfo.rawValue: Data(sharedInfo),
        ]
        guard let result = SecKeyCopyKeyExchangeResult(privateKey, algorithm, peerSecKey, parameters as CFDictionary, &error) as Data? else {
            throw Self.error(error, doing: "agree on a key")
        }
        guard kdf == .hkdfSHA256 else { return SymmetricKey(data: result) }
        // The cofactor ECDH secret of P-256 is the plain one; HKDF as KeyAgreement does it.
        return HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: result), salt: Data(), info: Data(sharedInfo), outputByteCount: size)
    }

    public func rsaDecrypt(_ ciphertext: [UInt8], tag: String, type: KeychainKeyType = .rsa2048,
                           hash: RSAEncryption.Hash = .sha256) throws -> SecretBytes {
        guard [.rsa2048, .rsa3072, .rsa4096].contains(type) else {
            throw KeychainError(.invalidArgument, "RSA decryption needs an rsa2048, rsa3072 or rsa4096 key, not \(type.rawValue)")
        }
        let found = try records(.key(tag: tag, type: type))
        guard found.count == 1 else { throw KeychainError(found.isEmpty ? .itemNotFound : .invalidArgument, "\(found.count) items match") }
        let algorithm: SecKeyAlgorithm = hash == .sha256 ? .rsaEncryptionOAEPSHA256 : .rsaEncryptionOAEPSHA1
        var error: Unmanaged<CFError>?
        guard let plaintext = SecKeyCreateDecryptedData(try secKey(found[0]), algorithm, Data(ciphertext) as CFData, &error) as Data? else {
            throw Self.error(error, doing: "decrypt")
        }
        return SecretBytes(plaintext)
    }

    // MARK: Reading items back

    private struct Record {
        var item: KeychainItem
        /// Names exactly this item (by its persistent reference).
        var persistentQuery: [CFString: Any]
    }

    private func records(_ query: KeychainQuery) throws -> [Record] {
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
                      let reference = attributes[kSecValuePersistentRef as String] as? Data else { continue }
                var exact = base(item.itemClass, keyType: item.keyType)
                exact[kSecValuePersistentRef] = reference
                exact[kSecAttrSynchronizable] = kSecAttrSynchronizableAny
                found.append(Record(item: item, persistentQuery: exact))
            }
        }
        return found
    }

    private func item(from attributes: [String: Any], query: KeychainQuery, keyType: KeychainKeyType?) -> KeychainItem? {
        func string(_ key: CFString) -> String? { attributes[key as String] as? String }
        let group = useDataProtectionKeychain ? string(kSecAttrAccessGroup) : nil
        let created = attributes[kSecAttrCreationDate as String] as? Date ?? Date(timeIntervalSinceReferenceDate: 0)
        let modified = attributes[kSecAttrModificationDate as String] as? Date ?? created
        let accessibility = Self.accessibility(attributes[kSecAttrAccessible as String])
        let synchronizable = (attributes[kSecAttrSynchronizable as String] as? Bool) ?? false
        switch query.itemClass {
        case .genericPassword:
            // Keys kept as generic passwords (service coffer.key.…) are not password items.
            guard let service = string(kSecAttrService), let account = string(kSecAttrAccount), let name = unstored(service),
                  !(namespace == nil && useDataProtectionKeychain && name.name.hasPrefix("coffer.key.")) else { return nil }
            return KeychainItem(itemClass: .genericPassword, service: name.name, account: account, applicationTag: nil, keyType: nil,
                                label: string(kSecAttrLabel), comment: string(kSecAttrComment), accessGroup: group ?? name.group,
                                accessibility: accessibility, synchronizable: synchronizable, created: created, modified: modified)
        case .key:
            let tagValue: String?
            var type = keyType
            if let keyType, !Self.isSecKey(keyType) {
                tagValue = string(kSecAttrAccount)
            } else {
                tagValue = (attributes[kSecAttrApplicationTag as String] as? Data).map { String(decoding: $0, as: UTF8.self) }
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
            return KeychainItem(itemClass: .key, service: nil, account: nil, applicationTag: tag.name, keyType: type, label: string(kSecAttrLabel),
                                comment: string(kSecAttrComment), accessGroup: group ?? tag.group, accessibility: accessibility,
                                synchronizable: synchronizable, created: created, modified: modified)
        }
    }

    private func secKey(_ record: Record) throws -> SecKey {
        var exact = record.persistentQuery
        exact[kSecReturnRef] = true
        var result: CFTypeRef?
        try Self.check(SecItemCopyMatching(exact as CFDictionary, &result), doing: "fetch the key")
        guard let result, CFGetTypeID(result) == SecKeyGetTypeID() else { throw KeychainError(.corrupted, "the keychain returned no key") }
        return result as! SecKey  // swiftlint:disable:this force_cast (checked by type ID above)
    }

    private static func publicKey(of privateKey: SecKey) throws -> AsymmetricPublicKey {
        var error: Unmanaged<CFError>?
        guard let publicKey = SecKeyCopyPublicKey(privateKey),
              let external = SecKeyCopyExternalRepresentation(publicKey, &error) as Data? else {
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
        case errSecDuplicateItem: throw KeychainError(.duplicateItem, "could not \(what): an item with the same primary key exists")
        case errSecInteractionNotAllowed: throw KeychainError(.interactionNotAllowed, "could not \(what): the keychain is locked (\(message))")
        case errSecAuthFailed, errSecUserCanceled: throw KeychainError(.authenticationFailed, "could not \(what): \(message)")
        case errSecDecode: throw KeychainError(.corrupted, "could not \(what): \(message)")
        default: throw KeychainError(.io, "could not \(what): \(message) (OSStatus \(status))")
        }
    }

    static func error(_ error: Unmanaged<CFError>?, doing what: String) -> KeychainError {
        guard let error = error?.takeRetainedValue() else { return KeychainError(.io, "could not \(what)") }
        let code = OSStatus(CFErrorGetCode(error))
        do { try check(code, doing: what) } catch let mapped as KeychainError where mapped.code != .io { return mapped } catch {}
        return KeychainError(.io, "could not \(what): \(CFErrorCopyDescription(error) as String? ?? "no reason given")")
    }
}
#endif
