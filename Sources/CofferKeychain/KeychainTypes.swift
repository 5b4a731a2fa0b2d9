import Coffer
import Foundation

/// The key types a keychain generates and stores.
///
/// A struct with static members rather than an enum, so that a later
/// release can add a type without breaking code that switches over them.
/// Stored and parsed by its raw value (`p256`, `rsa2048`, …).
public struct KeychainKeyType: RawRepresentable, Hashable, Codable, Sendable, CaseIterable, CustomStringConvertible,
    OpenNameSet
{
    package enum Kind: String, CaseIterable, Sendable {
        case p256, x25519, rsa2048, rsa3072, rsa4096, symmetric256
    }
    package let kind: Kind
    package init(_ kind: Kind) { self.kind = kind }

    /// A P-256 key-agreement key (the Secure Enclave's curve).
    public static let p256 = KeychainKeyType(.p256)
    /// An X25519 key-agreement key.
    public static let x25519 = KeychainKeyType(.x25519)
    /// RSA keys for OAEP, of 2048, 3072 and 4096 bits.
    public static let rsa2048 = KeychainKeyType(.rsa2048)
    public static let rsa3072 = KeychainKeyType(.rsa3072)
    public static let rsa4096 = KeychainKeyType(.rsa4096)
    /// A 256-bit symmetric key.
    public static let symmetric256 = KeychainKeyType(.symmetric256)

    /// Refuses `type` unless it is an RSA key (for RSA decryption).
    package static func requireRSA(_ type: KeychainKeyType) throws {
        guard [.rsa2048, .rsa3072, .rsa4096].contains(type) else {
            throw KeychainError(
                .invalidArgument, "RSA decryption needs an rsa2048, rsa3072 or rsa4096 key, not \(type.rawValue)")
        }
    }
}

/// When an item may be read (kSecAttrAccessible…): stored everywhere,
/// enforced only by the Apple backend. A struct with static members, so
/// that Apple's next class can be added without breaking switches.
public struct Accessibility: RawRepresentable, Hashable, Codable, Sendable, CaseIterable, CustomStringConvertible,
    OpenNameSet
{
    package enum Kind: String, CaseIterable, Sendable {
        case whenUnlocked, afterFirstUnlock, whenUnlockedThisDeviceOnly, afterFirstUnlockThisDeviceOnly,
            whenPasscodeSetThisDeviceOnly
    }
    package let kind: Kind
    package init(_ kind: Kind) { self.kind = kind }

    public static let whenUnlocked = Accessibility(.whenUnlocked)
    public static let afterFirstUnlock = Accessibility(.afterFirstUnlock)
    public static let whenUnlockedThisDeviceOnly = Accessibility(.whenUnlockedThisDeviceOnly)
    public static let afterFirstUnlockThisDeviceOnly = Accessibility(.afterFirstUnlockThisDeviceOnly)
    public static let whenPasscodeSetThisDeviceOnly = Accessibility(.whenPasscodeSetThisDeviceOnly)
}
