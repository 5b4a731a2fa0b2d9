import Coffer
import Foundation

/// The SecKeyAlgorithm values Coffer reads and writes, parsed from either
/// spelling: Swift's (`eciesEncryptionCofactorVariableIVX963SHA256AESGCM`,
/// with or without the leading dot) or the C constant
/// (`kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM`).
///
/// A struct with static members rather than an enum, so that a later
/// release can add an algorithm without breaking code that switches.
public struct AppleAlgorithm: Sendable, Hashable, CustomStringConvertible {
    public enum Hash: String, Sendable, CaseIterable {
        case sha1 = "SHA1"
        case sha224 = "SHA224"
        case sha256 = "SHA256"
        case sha384 = "SHA384"
        case sha512 = "SHA512"
    }

    package enum Kind: Sendable, Hashable {
        case ecies(cofactor: Bool, variableIV: Bool, hash: Hash)
        case rsaOAEPAESGCM(hash: Hash)
        case ecdhKeyExchange(cofactor: Bool, hash: Hash?)
    }
    /// For exhaustive switches inside the package.
    package let kind: Kind

    package init(_ kind: Kind) { self.kind = kind }

    /// ECIES; `cofactor` names the Cofactor variant, which on the NIST
    /// curves (cofactor 1) computes exactly what Standard does.
    public static func ecies(cofactor: Bool, variableIV: Bool, hash: Hash) -> AppleAlgorithm {
        AppleAlgorithm(.ecies(cofactor: cofactor, variableIV: variableIV, hash: hash))
    }
    /// RSA-OAEP wrapping an AES-GCM key (rsaEncryptionOAEP…AESGCM).
    public static func rsaOAEPAESGCM(hash: Hash) -> AppleAlgorithm { AppleAlgorithm(.rsaOAEPAESGCM(hash: hash)) }
    /// ECDH key exchange; `hash` nil is the raw shared secret.
    public static func ecdhKeyExchange(cofactor: Bool, hash: Hash?) -> AppleAlgorithm {
        AppleAlgorithm(.ecdhKeyExchange(cofactor: cofactor, hash: hash))
    }

    public init(_ name: String) throws {
        var text = name.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix(".") { text.removeFirst() }
        if text.hasPrefix("kSecKeyAlgorithm") {
            text.removeFirst("kSecKeyAlgorithm".count)
            for acronym in ["ECIES", "RSA", "ECDH"] where text.hasPrefix(acronym) {
                text = acronym.lowercased() + text.dropFirst(acronym.count)
            }
        }
        func hash(_ suffix: Substring) -> Hash? { Hash(rawValue: String(suffix)) }
        let unknown = CofferError(
            .invalidArgument,
            "unknown SecKey algorithm \"\(name)\"; expected e.g. eciesEncryptionCofactorVariableIVX963SHA256AESGCM, rsaEncryptionOAEPSHA256AESGCM or ecdhKeyExchangeCofactorX963SHA256 (or their kSecKeyAlgorithm… constants)"
        )
        /// Takes "Standard" (false) or "Cofactor" (true) off the front.
        func variant(_ rest: inout Substring) throws -> Bool {
            for (word, cofactor) in [("Standard", false), ("Cofactor", true)] where rest.hasPrefix(word) {
                rest = rest.dropFirst(word.count)
                return cofactor
            }
            throw unknown
        }
        if text.hasPrefix("eciesEncryption"), text.hasSuffix("AESGCM") {
            var middle = text.dropFirst("eciesEncryption".count).dropLast("AESGCM".count)
            let cofactor = try variant(&middle)
            let variableIV = middle.hasPrefix("VariableIV")
            if variableIV { middle = middle.dropFirst(10) }
            guard middle.hasPrefix("X963"), let hash = hash(middle.dropFirst(4)) else { throw unknown }
            guard !(variableIV && hash == .sha1) else {
                throw CofferError(.invalidArgument, "Apple defines no VariableIV ECIES variant with SHA-1 (\(name))")
            }
            self = .ecies(cofactor: cofactor, variableIV: variableIV, hash: hash)
        } else if text.hasPrefix("rsaEncryptionOAEP"), text.hasSuffix("AESGCM") {
            guard let hash = hash(text.dropFirst("rsaEncryptionOAEP".count).dropLast(6)) else { throw unknown }
            self = .rsaOAEPAESGCM(hash: hash)
        } else if text.hasPrefix("ecdhKeyExchange") {
            var rest = text.dropFirst("ecdhKeyExchange".count)
            let cofactor = try variant(&rest)
            if rest.isEmpty {
                self = .ecdhKeyExchange(cofactor: cofactor, hash: nil)
                return
            }
            guard rest.hasPrefix("X963"), let hash = hash(rest.dropFirst(4)) else { throw unknown }
            self = .ecdhKeyExchange(cofactor: cofactor, hash: hash)
        } else {
            throw unknown
        }
    }

    /// The Swift spelling.
    public var description: String {
        switch kind {
        case let .ecies(cofactor, variableIV, hash):
            "eciesEncryption\(cofactor ? "Cofactor" : "Standard")\(variableIV ? "VariableIV" : "")X963\(hash.rawValue)AESGCM"
        case let .rsaOAEPAESGCM(hash): "rsaEncryptionOAEP\(hash.rawValue)AESGCM"
        case let .ecdhKeyExchange(cofactor, hash):
            "ecdhKeyExchange\(cofactor ? "Cofactor" : "Standard")" + (hash.map { "X963\($0.rawValue)" } ?? "")
        }
    }
}
