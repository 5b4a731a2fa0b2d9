import Coffer
import Foundation

// The SecItem model that AppleKeychain is written against, without the
// Security framework: attributes named by what they mean, values that say
// what kind they are, and the four SecItem calls as a protocol. On Apple
// platforms `SecurityFrameworkItems` maps them onto kSec… constants and
// calls Security; everywhere, `FakeSecItems` (CofferTesting) implements
// Apple's documented rules in memory, so the logic is tested on Linux.

/// The item attributes Coffer reads and writes (kSecClass, kSecAttr…).
package enum SecItemAttribute: Hashable, Sendable, CaseIterable {
    case itemClass, service, account, applicationTag, keyType, keySizeInBits, keyClass, label, comment, accessGroup,
        accessible, synchronizable, creationDate, modificationDate
}

/// An attribute's value.
package enum SecItemValue: Hashable, Sendable {
    case string(String)
    case data([UInt8])
    case int(Int)
    case bool(Bool)
    case date(Date)
    /// kSecClassGenericPassword, kSecClassKey.
    case genericPasswordClass, keyClass
    /// kSecAttrKeyClassPrivate.
    case privateKeyClass
    /// kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyTypeRSA.
    case ecPrimeRandom, rsa
    /// kSecAttrAccessible…
    case accessibility(Accessibility)
    /// kSecAttrSynchronizableAny (queries only).
    case synchronizableAny

    var string: String? { if case .string(let value) = self { value } else { nil } }
    var bytes: [UInt8]? { if case .data(let value) = self { value } else { nil } }
}

package typealias SecItemAttributes = [SecItemAttribute: SecItemValue]

/// What a search returns for each match: its attributes and a persistent
/// reference that names exactly it.
package struct SecItemMatch: Sendable {
    package var attributes: SecItemAttributes
    package var reference: [UInt8]
    package init(attributes: SecItemAttributes, reference: [UInt8]) {
        self.attributes = attributes
        self.reference = reference
    }
}

/// SecItemAdd / SecItemCopyMatching / SecItemUpdate / SecItemDelete, with
/// the options Coffer always uses. Every error is a `KeychainError`
/// (``KeychainError/init(secStatus:doing:message:)`` maps OSStatus codes).
package protocol SecItemBackend: Sendable {
    /// SecItemAdd. `value` is the password's bytes, or for a private key
    /// (`keyClass` items) its PKCS#8 DER, which the backend makes a key of.
    func add(_ attributes: SecItemAttributes, value: [UInt8]) throws
    /// SecItemCopyMatching with kSecMatchLimitAll, returning attributes and
    /// persistent references; no match is an empty array.
    func search(_ query: SecItemAttributes) throws -> [SecItemMatch]
    /// The bytes of the generic password `reference` names (kSecReturnData).
    func data(_ reference: [UInt8], base: SecItemAttributes) throws -> [UInt8]
    /// The PKCS#8 DER of the private key `reference` names; a key that never
    /// leaves its hardware (the Secure Enclave) is an error.
    func exportPrivateKey(_ reference: [UInt8], base: SecItemAttributes) throws -> [UInt8]
    /// SecItemUpdate of the item `reference` names; `value` replaces a password's bytes.
    func update(_ reference: [UInt8], base: SecItemAttributes, with attributes: SecItemAttributes, value: [UInt8]?)
        throws
    /// SecItemDelete of the item `reference` names.
    func delete(_ reference: [UInt8], base: SecItemAttributes) throws
}

extension KeychainError {
    /// Security's status codes as keychain errors: errSecItemNotFound
    /// (−25300), errSecDuplicateItem (−25299), errSecInteractionNotAllowed
    /// (−25308), errSecAuthFailed (−25293), errSecUserCanceled (−128),
    /// errSecDecode (−26275); anything else is `io`. Nil for errSecSuccess.
    package init?(secStatus status: Int32, doing what: String, message: String) {
        switch status {
        case 0: return nil
        case -25300: self.init(.itemNotFound, "no item matches")
        case -25299: self.init(.duplicateItem, "could not \(what): an item with the same primary key exists")
        case -25308: self.init(.interactionNotAllowed, "could not \(what): the keychain is locked (\(message))")
        case -25293, -128: self.init(.authenticationFailed, "could not \(what): \(message)")
        case -26275: self.init(.corrupted, "could not \(what): \(message)")
        default: self.init(.io, "could not \(what): \(message) (OSStatus \(status))")
        }
    }
}
