#if Server
import Coffer
import Crypto
import Foundation

/// What names a key: the realm the server serves, the subject the sign-in
/// token names, an optional device (empty: none) and the purpose the app
/// chose ("notes", "photos"). A key's every version is sealed under the
/// server's KEK with its name and version as context, so a row copied to
/// another name does not open.
public struct KeyName: Sendable, Hashable, CustomStringConvertible {
    public let realm: String
    public let subject: String
    public let device: String
    public let purpose: String

    /// Checks every part: a purpose is 1–64 of `a-z 0-9 . _ -`; a device
    /// at most 128 of `A-Z a-z 0-9 . _ : -`; a realm 1–64 like a purpose;
    /// a subject 1–255 Unicode scalars with no control character.
    public init(realm: String, subject: String, device: String = "", purpose: String) throws {
        guard Self.isToken(realm, lowercaseOnly: true, range: 1...64) else {
            throw KeyServerError(.invalidRealm, "a realm is 1–64 characters of a-z, 0-9, '.', '_' and '-'")
        }
        guard Self.isToken(purpose, lowercaseOnly: true, range: 1...64) else {
            throw KeyServerError(.invalidPurpose, "a purpose is 1–64 characters of a-z, 0-9, '.', '_' and '-'")
        }
        guard Self.isToken(device, lowercaseOnly: false, range: 0...128, colon: true) else {
            throw KeyServerError(
                .invalidDevice, "a device is at most 128 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'")
        }
        guard (1...255).contains(subject.utf8.count),
            !subject.unicodeScalars.contains(where: Self.isControl)
        else {
            throw KeyServerError(.invalidSubject, "a subject is 1–255 characters with no control character")
        }
        self.realm = realm
        self.subject = subject
        self.device = device
        self.purpose = purpose
    }

    /// General category Cc: C0, DEL and C1 (the Unicode standard fixes
    /// these 65 code points as Cc, §23.1), without a property lookup.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    static func isToken(_ text: String, lowercaseOnly: Bool, range: ClosedRange<Int>, colon: Bool = false) -> Bool {
        range.contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    true
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): !lowercaseOnly
                case UInt8(ascii: ":"): colon
                default: false
                }
            }
    }

    public var description: String {
        "\(realm)/\(purpose)\(device.isEmpty ? "" : " on device \(device)")"
    }

    /// The context a version is sealed under (docs/key-server.md).
    func context(version: Int) throws -> SealingContext {
        try SealingContext("coffer key server v1", realm, subject, device, purpose, String(version))
    }

    /// The id of a version's key: the first 8 bytes of
    /// HMAC-SHA-256(key, "coffer key server key id v2"), in hex. Not
    /// secret, stable for the version, and committing to the key: two
    /// different keys under one name (a replica that made its own KEK and
    /// database, operator trial 4) have different ids, and anyone holding
    /// the key can check its id. (Version 1 hashed the name and version
    /// alone, so such keys shared an id.)
    static func keyID(of key: some ContiguousBytes) -> String {
        let mac = key.withUnsafeBytes { bytes in
            HMAC<SHA256>.authenticationCode(
                for: Array("coffer key server key id v2".utf8), using: SymmetricKey(data: bytes))
        }
        return Hex.encode(Array(mac.prefix(8)))
    }
}

/// A key as released to its subject.
public struct ReleasedKey: Sendable, CustomStringConvertible {
    public let name: KeyName
    public let version: Int
    public let keyID: String
    /// The 256-bit key; hidden from `description`.
    public let key: SymmetricKey

    public var description: String { "ReleasedKey(\(name), version \(version), id \(keyID), <redacted>)" }
}
#endif
