import Coffer
import CryptoExtras
import Foundation

/// Apple's keychain model carried out on any ``SecItemBackend``: the
/// logic of `AppleKeychain` (which runs it on the Security framework),
/// tested on every platform against `FakeSecItems`.
package final class SecItemKeychain<Backend: SecItemBackend>: Keychain {
    package let layout: SecItemLayout
    package let backend: Backend

    package init(layout: SecItemLayout, backend: Backend) {
        self.layout = layout
        self.backend = backend
    }

    /// One item found: what it is, and how to name exactly it again.
    package struct Record {
        package var item: KeychainItem
        package var reference: [UInt8]
        /// The base query of its storage place.
        package var base: SecItemAttributes
    }

    package func records(_ query: KeychainQuery) throws -> [Record] {
        var found: [Record] = []
        for (type, dictionary) in layout.places(query) {
            var search = dictionary
            if search[.synchronizable] == nil { search[.synchronizable] = .synchronizableAny }
            for match in try backend.search(search) {
                guard let item = layout.item(from: match.attributes, itemClass: query.itemClass, keyType: type),
                    query.matches(item)
                else { continue }
                found.append(
                    Record(
                        item: item, reference: match.reference,
                        base: layout.base(item.itemClass, keyType: item.keyType)))
            }
        }
        return found
    }

    /// The one record `query` names: none is `itemNotFound`, several `invalidArgument`.
    package func single(_ query: KeychainQuery) throws -> Record {
        let found = try records(query)
        guard found.count == 1 else {
            throw KeychainError(
                found.isEmpty ? .itemNotFound : .invalidArgument,
                found.isEmpty ? "no item matches" : "\(found.count) items match; name exactly one")
        }
        return found[0]
    }

    package func add(_ item: KeychainItem, data: SecretBytes) throws {
        try ItemStore.validate(item)
        if let type = item.keyType, SecItemLayout.isSecKey(type) {
            // The keychain keeps SecKeys: PKCS#8 in, checked to be a key of this type.
            guard let key = try? KeyFiles.privateKey(data.revealed()), Self.holds(key, type) else {
                throw KeychainError(.invalidArgument, "a \(type.rawValue) key item holds a PKCS#8 private key")
            }
        }
        try backend.add(layout.attributes(adding: item), value: data.revealed())
    }

    static func holds(_ key: AsymmetricPrivateKey, _ type: KeychainKeyType) -> Bool {
        switch (key, type.kind) {
        case (.p256, .p256): true
        case (.rsa(let rsa), .rsa2048), (.rsa(let rsa), .rsa3072), (.rsa(let rsa), .rsa4096):
            rsa.keySizeInBits == SecItemLayout.secKeyType(type).bits
        default: false
        }
    }

    package func copyMatching(_ query: KeychainQuery) throws -> [KeychainItem] {
        let found = try records(query).map(\.item)
        guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
        return found
    }

    package func copyData(_ query: KeychainQuery) throws -> SecretBytes {
        let record = try single(query)
        if let type = record.item.keyType, SecItemLayout.isSecKey(type) {
            return SecretBytes(try backend.exportPrivateKey(record.reference, base: record.base))
        }
        return SecretBytes(try backend.data(record.reference, base: record.base))
    }

    package func update(_ query: KeychainQuery, with changes: KeychainChanges) throws {
        let found = try records(query)
        guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
        if changes.data != nil, found.contains(where: { $0.item.keyType.map(SecItemLayout.isSecKey) == true }) {
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
            try backend.update(
                record.reference, base: record.base, with: layout.attributes(updating: item, changes: changes),
                value: changes.data?.revealed())
        }
    }

    package func delete(_ query: KeychainQuery) throws {
        let found = try records(query)
        guard !found.isEmpty else { throw KeychainError(.itemNotFound, "no item matches") }
        for record in found { try backend.delete(record.reference, base: record.base) }
    }
}
