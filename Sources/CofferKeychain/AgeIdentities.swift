import Coffer
import Foundation

/// age identities kept in a keychain: a generic-password item per label,
/// of service `coffer.age-identity`, whose account and label are the
/// label and whose secret is an identity file's bytes (`AGE-SECRET-KEY-1…`
/// lines, or a private key file).
///
/// ```swift
/// try keychain.addAgeIdentity(X25519.Identity().exportSecretKey(), label: "laptop")
/// let identities = try keychain.ageIdentities(label: "laptop")
/// let plaintext = try Age.decrypt(ciphertext, with: identities)
/// ```
extension Keychain {
    /// The item service under which age identities are kept.
    public static var ageIdentityService: String { "coffer.age-identity" }

    /// Keeps an identity file's contents under `label`. Contents that hold
    /// no usable identity are refused with the parser's `CofferError`
    /// (`malformed`), so nothing is stored that would decrypt nothing; an
    /// existing label is `duplicateItem`.
    public func addAgeIdentity(_ identityFile: SecretBytes, label: String) throws {
        _ = try AgeKeys.identities(fileBytes: identityFile.revealed(), name: "the identity")
        try add(.password(service: Self.ageIdentityService, account: label, label: label), data: identityFile)
    }

    /// Keeps one identity's text (`AGE-SECRET-KEY-1…`) under `label`.
    public func addAgeIdentity(_ identity: String, label: String) throws {
        try addAgeIdentity(SecretBytes(Array((identity + "\n").utf8)), label: label)
    }

    /// The identities kept under `label` (`itemNotFound` when there are none).
    public func ageIdentities(label: String) throws -> [any Identity] {
        let bytes: SecretBytes
        do { bytes = try copyData(.password(service: Self.ageIdentityService, account: label)) } catch let error
            as KeychainError
            where error.code == .itemNotFound
        {
            throw KeychainError(.itemNotFound, "the keychain holds no age identity labelled \(label)")
        }
        do { return try AgeKeys.identities(fileBytes: bytes.revealed(), name: "keychain identity \(label)") } catch let
            error as CofferError
        {
            throw KeychainError(.corrupted, error.description)
        }
    }

    /// The labels of every age identity kept here.
    public func ageIdentityLabels() throws -> [String] {
        do {
            return try copyMatching(.password(service: Self.ageIdentityService)).compactMap(\.account).sorted()
        } catch let error as KeychainError
            where error.code == .itemNotFound
        {
            return []
        }
    }
}
