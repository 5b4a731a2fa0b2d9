import Coffer
import CofferKeychain
import Foundation

/// Apple's SecItem calls in memory, following the rules Apple documents
/// (the SecItem reference and the "Keychain Items" guide), so that
/// AppleKeychain's logic (`SecItemKeychain`) is tested on every platform:
///
/// - an item's primary key is its class, access group and synchronizable
///   flag, plus service and account for generic passwords, or application
///   tag, key class, key type and size for keys; `add` of an existing
///   primary key is errSecDuplicateItem, and so is an `update` that would
///   make one;
/// - a search matches items whose attributes equal every attribute asked
///   for; without a synchronizable attribute only non-synchronizable items
///   match (kSecAttrSynchronizableAny matches both);
/// - new items get creation and modification dates and, unless told,
///   kSecAttrAccessibleWhenUnlocked; an update moves the modification date.
///
/// Where it is simpler than Apple's: no default access group is assigned,
/// and a private key is kept as the PKCS#8 it came in as.
package final class FakeSecItems: SecItemBackend {
    struct Item {
        var attributes: SecItemAttributes
        var value: [UInt8]
    }
    struct State {
        var items: [[UInt8]: Item] = [:]
        var nextReference: UInt64 = 1
    }
    private let state = Locked(State())

    package init() {}

    static let primaryKeys: [SecItemValue: [SecItemAttribute]] = [
        .genericPasswordClass: [.service, .account, .accessGroup, .synchronizable],
        .keyClass: [.applicationTag, .keyClass, .keyType, .keySizeInBits, .accessGroup, .synchronizable],
    ]

    static func primaryKey(_ attributes: SecItemAttributes) -> [SecItemValue?] {
        let itemClass = attributes[.itemClass]!
        return [itemClass]
            + primaryKeys[itemClass]!.map { name in
                name == .synchronizable ? attributes[name] ?? .bool(false) : attributes[name]
            }
    }

    private func locked<T>(_ body: (inout State) throws -> T) rethrows -> T {
        try state.withLock { try body(&$0) }
    }

    package func add(_ attributes: SecItemAttributes, value: [UInt8]) throws {
        guard let itemClass = attributes[.itemClass], Self.primaryKeys[itemClass] != nil else {
            throw KeychainError(secStatus: -50, doing: "add the item", message: "no item class")!
        }
        try locked { state in
            let key = Self.primaryKey(attributes)
            if state.items.values.contains(where: { Self.primaryKey($0.attributes) == key }) {
                throw KeychainError(secStatus: -25299, doing: "add the item", message: "duplicate")!
            }
            var stored = attributes
            let now = Date()
            stored[.creationDate] = .date(now)
            stored[.modificationDate] = .date(now)
            if stored[.accessible] == nil { stored[.accessible] = .accessibility(.whenUnlocked) }
            if stored[.synchronizable] == nil { stored[.synchronizable] = .bool(false) }
            let reference = withUnsafeBytes(of: state.nextReference.bigEndian, Array.init)
            state.nextReference += 1
            state.items[reference] = Item(attributes: stored, value: value)
        }
    }

    static func matches(_ item: SecItemAttributes, _ query: SecItemAttributes) -> Bool {
        query.allSatisfy { name, wanted in
            if name == .synchronizable && wanted == .synchronizableAny { return true }
            return item[name] == wanted
        } && (query[.synchronizable] != nil || item[.synchronizable] != .bool(true))
    }

    package func search(_ query: SecItemAttributes) throws -> [SecItemMatch] {
        locked { state in
            state.items.filter { Self.matches($0.value.attributes, query) }.sorted {
                $0.key.lexicographicallyPrecedes($1.key)
            }
            .map { SecItemMatch(attributes: $0.value.attributes, reference: $0.key) }
        }
    }

    private static func item(_ state: State, _ reference: [UInt8], base: SecItemAttributes) throws -> Item {
        guard let item = state.items[reference],
            Self.matches(item.attributes, base.merging([.synchronizable: .synchronizableAny]) { $1 })
        else {
            throw KeychainError(secStatus: -25300, doing: "find the item", message: "not found")!
        }
        return item
    }

    package func data(_ reference: [UInt8], base: SecItemAttributes) throws -> [UInt8] {
        try value(reference, base: base, of: .genericPasswordClass, missing: "data")
    }

    package func exportPrivateKey(_ reference: [UInt8], base: SecItemAttributes) throws -> [UInt8] {
        try value(reference, base: base, of: .keyClass, missing: "key")
    }

    /// The secret of the item `reference` names, which must be of `itemClass`.
    private func value(
        _ reference: [UInt8], base: SecItemAttributes, of itemClass: SecItemValue, missing: String
    ) throws -> [UInt8] {
        try locked { state in
            let found = try Self.item(state, reference, base: base)
            guard found.attributes[.itemClass] == itemClass else {
                throw KeychainError(.corrupted, "the keychain returned no \(missing)")
            }
            return found.value
        }
    }

    package func update(
        _ reference: [UInt8], base: SecItemAttributes, with attributes: SecItemAttributes, value: [UInt8]?
    ) throws {
        try locked { state in
            var found = try Self.item(state, reference, base: base)
            found.attributes.merge(attributes) { $1 }
            let key = Self.primaryKey(found.attributes)
            if state.items.contains(where: { $0.key != reference && Self.primaryKey($0.value.attributes) == key }) {
                throw KeychainError(secStatus: -25299, doing: "update the item", message: "duplicate")!
            }
            found.attributes[.modificationDate] = .date(Date())
            if let value { found.value = value }
            state.items[reference] = found
        }
    }

    package func delete(_ reference: [UInt8], base: SecItemAttributes) throws {
        try locked { state in
            _ = try Self.item(state, reference, base: base)
            state.items[reference] = nil
        }
    }
}
