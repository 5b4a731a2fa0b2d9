import Coffer
import Crypto
import CryptoExtras
import Foundation
import Synchronization

/// The items of a keychain and the rules of Apple's model over them; the
/// in-memory and file backends both apply operations through it.
struct ItemStore: Codable, Sendable {
    struct Entry: Codable, Sendable {
        var item: KeychainItem
        var data: Data
    }

    var entries: [Entry] = []

    /// An item needs its class's primary key.
    static func validate(_ item: KeychainItem) throws {
        if item.itemClass == .genericPassword, item.service == nil || item.account == nil {
            throw KeychainError(.invalidArgument, "a password item needs a service and an account")
        }
        if item.itemClass == .key, item.applicationTag == nil || item.keyType == nil {
            throw KeychainError(.invalidArgument, "a key item needs an application tag and a key type")
        }
    }

    mutating func add(_ item: KeychainItem, data: SecretBytes) throws {
        try Self.validate(item)
        guard !entries.contains(where: { $0.item.collides(with: item) }) else {
            throw KeychainError(
                .duplicateItem,
                "an item with the same \(item.itemClass == .key ? "tag and key type" : "service and account") exists")
        }
        entries.append(Entry(item: item, data: Data(data.revealed())))
    }

    func matching(_ query: KeychainQuery) throws -> [Int] {
        let indices = entries.indices.filter { query.matches(entries[$0].item) }
        guard !indices.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
        return indices
    }

    func copyMatching(_ query: KeychainQuery) throws -> [KeychainItem] { try matching(query).map { entries[$0].item } }

    func copyData(_ query: KeychainQuery) throws -> SecretBytes {
        let indices = try matching(query)
        guard indices.count == 1 else {
            throw KeychainError(.invalidArgument, "\(indices.count) items match; name exactly one")
        }
        return SecretBytes(entries[indices[0]].data)
    }

    mutating func update(_ query: KeychainQuery, with changes: KeychainChanges) throws {
        let indices = try matching(query)
        var updated = entries
        let now = Date()
        for index in indices {
            updated[index].item = try changes.applied(to: updated[index].item, now: now)
            if let data = changes.data { updated[index].data = Data(data.revealed()) }
        }
        try Self.checkNoCollisions(updated.map(\.item))
        entries = updated
    }

    /// Throws `duplicateItem` if any two items share a primary key.
    static func checkNoCollisions(_ items: [KeychainItem]) throws {
        for (position, item) in items.enumerated()
        where items[(position + 1)...].contains(where: { $0.collides(with: item) }) {
            throw KeychainError(.duplicateItem, "the update would make two items collide")
        }
    }

    mutating func delete(_ query: KeychainQuery) throws {
        let indices = Set(try matching(query))
        entries = entries.enumerated().filter { !indices.contains($0.offset) }.map(\.element)
    }
}

/// Keys generated straight into a keychain, and the one named way out.
extension Keychain {
    /// Generates a key of `type` under `tag` and returns its public key
    /// (nil for a symmetric key). The private key stays in the keychain
    /// (PKCS#8 DER, or the 32 raw bytes of a symmetric key).
    @discardableResult
    public func generateKey(_ type: KeychainKeyType, tag: String) throws -> AsymmetricPublicKey? {
        try generateKey(type, tag: tag, label: nil)
    }

    /// The default key generation: swift-crypto makes the key, the keychain
    /// keeps its PKCS#8 DER.
    @discardableResult
    public func generateKey(_ type: KeychainKeyType, tag: String, label: String?) throws -> AsymmetricPublicKey? {
        let privateKey: AsymmetricPrivateKey?
        let bytes: [UInt8]
        switch type.kind {
        case .p256:
            let key = AsymmetricPrivateKey.p256(P256.Signing.PrivateKey())
            privateKey = key
            bytes = try KeyFiles.encode(key, as: .pkcs8, der: true)
        case .x25519:
            let key = AsymmetricPrivateKey.x25519(Curve25519.KeyAgreement.PrivateKey())
            privateKey = key
            bytes = try KeyFiles.encode(key, as: .pkcs8, der: true)
        case .rsa2048, .rsa3072, .rsa4096:
            let bits = type.kind == .rsa2048 ? 2048 : type.kind == .rsa3072 ? 3072 : 4096
            let key = AsymmetricPrivateKey.rsa(try _RSA.Signing.PrivateKey(keySize: .init(bitCount: bits)))
            privateKey = key
            bytes = try KeyFiles.encode(key, as: .pkcs8, der: true)
        case .symmetric256:
            privateKey = nil
            bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        }
        try add(.key(tag: tag, type: type, label: label), data: SecretBytes(bytes))
        return privateKey?.publicKey
    }

    /// The default agreement: the stored key is loaded for this one call.
    public func agree(
        tag: String, type: KeychainKeyType, peer: AsymmetricPublicKey, kdf: KeyAgreement.KDF = .x963SHA256,
        size: Int = 32, sharedInfo: [UInt8] = []
    ) throws -> SymmetricKey {
        guard type == .p256 || type == .x25519 else {
            throw KeychainError(.invalidArgument, "key agreement needs a p256 or x25519 key, not \(type.rawValue)")
        }
        let privateKey = try exportPrivateKey(tag: tag, type: type)
        return try KeyAgreement.agree(privateKey: privateKey, peer: peer, kdf: kdf, size: size, sharedInfo: sharedInfo)
    }

    /// The default RSA-OAEP decryption: the stored key is loaded for this one call.
    public func rsaDecrypt(
        _ ciphertext: [UInt8], tag: String, type: KeychainKeyType = .rsa2048,
        hash: RSAEncryption.Hash = .sha256
    ) throws -> SecretBytes {
        try KeychainKeyType.requireRSA(type)
        return SecretBytes(
            try RSAEncryption.decrypt(ciphertext, with: try exportPrivateKey(tag: tag, type: type), hash: hash))
    }

    /// The public key of the key under `tag`.
    public func publicKey(tag: String, type: KeychainKeyType) throws -> AsymmetricPublicKey {
        try exportPrivateKey(tag: tag, type: type).publicKey
    }

    /// The private key itself: the explicit, named way a key leaves the keychain.
    public func exportPrivateKey(tag: String, type: KeychainKeyType) throws -> AsymmetricPrivateKey {
        guard type != .symmetric256 else {
            throw KeychainError(.invalidArgument, "a symmetric key has no public half; use exportSymmetricKey")
        }
        let data = try copyData(.key(tag: tag, type: type))
        do { return try KeyFiles.privateKey(data.revealed()) } catch {
            throw KeychainError(.corrupted, "the stored \(type.rawValue) key under tag \(tag) does not parse")
        }
    }

    /// A symmetric key's bytes: the explicit way out.
    public func exportSymmetricKey(tag: String) throws -> SymmetricKey {
        SymmetricKey(data: try copyData(.key(tag: tag, type: .symmetric256)).revealed())
    }

    /// The key under `tag`, generated first if there is none (the seed's
    /// "get or create an RSA-2048 key by tag").
    @discardableResult
    public func getOrCreateKey(_ type: KeychainKeyType, tag: String) throws -> AsymmetricPublicKey? {
        try getOrCreateKey(type, tag: tag, label: nil)
    }

    /// The default get-or-create (``Keychain/getOrCreateKey(_:tag:label:)``).
    @discardableResult
    public func getOrCreateKey(_ type: KeychainKeyType, tag: String, label: String?) throws -> AsymmetricPublicKey? {
        do {
            if type == .symmetric256 {
                _ = try copyData(.key(tag: tag, type: type))
                return nil
            }
            return try publicKey(tag: tag, type: type)
        } catch let error as KeychainError where error.code == .itemNotFound {
            do { return try generateKey(type, tag: tag, label: label) } catch let error as KeychainError
                where error.code == .duplicateItem
            {
                // Another process made it first.
                return type == .symmetric256 ? nil : try publicKey(tag: tag, type: type)
            }
        }
    }

    /// Every item's attributes, of every class (never secrets). An empty
    /// keychain is an empty list; any other failure (a locked collection,
    /// a damaged file) is thrown, never turned into an empty list.
    public func allItems() throws -> [KeychainItem] {
        var items: [KeychainItem] = []
        for itemClass in ItemClass.allCases {
            do { items += try copyMatching(KeychainQuery(itemClass: itemClass)) } catch let error as KeychainError
                where error.code == .itemNotFound
            {}
        }
        return items
    }

    /// The password for service/account, stored from `make()` first if there is none.
    public func getOrCreatePassword(service: String, account: String, make: () throws -> SecretBytes) throws
        -> SecretBytes
    {
        do { return try copyData(.password(service: service, account: account)) } catch let error as KeychainError
            where error.code == .itemNotFound
        {
            let secret = try make()
            do { try add(.password(service: service, account: account), data: secret) } catch let error as KeychainError
                where error.code == .duplicateItem
            {
                return try copyData(.password(service: service, account: account))
            }
            return secret
        }
    }
}

/// Keeps items in memory: for tests and previews.
public final class InMemoryKeychain: Keychain, Sendable {
    private let store = Locked(ItemStore())

    public init() {}

    private func locked<T>(_ body: (inout ItemStore) throws -> T) throws -> T {
        try store.withLock { store throws -> T in try body(&store) }
    }

    public func add(_ item: KeychainItem, data: SecretBytes) throws { try locked { try $0.add(item, data: data) } }
    public func copyMatching(_ query: KeychainQuery) throws -> [KeychainItem] {
        try locked { try $0.copyMatching(query) }
    }
    public func copyData(_ query: KeychainQuery) throws -> SecretBytes { try locked { try $0.copyData(query) } }
    public func update(_ query: KeychainQuery, with changes: KeychainChanges) throws {
        try locked { try $0.update(query, with: changes) }
    }
    public func delete(_ query: KeychainQuery) throws { try locked { try $0.delete(query) } }
}
