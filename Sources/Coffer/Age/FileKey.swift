import Crypto
import Foundation

/// The 128-bit key that encrypts one age file's payload and authenticates
/// its header. Recipients wrap it; identities unwrap it.
///
/// Its bytes are reachable only through `withUnsafeBytes`, for recipient
/// implementations that must encrypt it; `description` is redacted and
/// `==` runs in constant time.
public struct FileKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public static let byteCount = 16
    let key: SymmetricKey

    /// A new random file key (CSPRNG).
    public static func random() -> FileKey { FileKey(key: SymmetricKey(size: .bits128)) }

    /// A file key from the 16 bytes a recipient stanza decrypted to.
    /// Throws `malformedHeader` for any other length.
    public init(unwrapped bytes: some ContiguousBytes) throws {
        let key = SymmetricKey(data: bytes)
        guard key.bitCount == FileKey.byteCount * 8 else {
            throw CofferError(.malformedHeader, "a recipient stanza holds a file key of the wrong length")
        }
        self.key = key
    }

    private init(key: SymmetricKey) { self.key = key }

    /// The file key in a stanza body sealed with HPKE's base mode, or nil
    /// when the receiver `makeReceiver` builds for this identity cannot be
    /// made or cannot open it: a share or body that does not open means
    /// "not for this identity", not an error.
    static func openHPKE(_ body: some DataProtocol, with makeReceiver: () throws -> HPKE.Recipient) throws -> FileKey? {
        guard var receiver = try? makeReceiver(), let plaintext = try? receiver.open(body, authenticating: Data())
        else { return nil }
        return try FileKey(unwrapped: plaintext)
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try key.withUnsafeBytes(body)
    }

    /// HKDF-SHA-256 of the file key, as the age spec uses it for the header
    /// MAC key (salt empty, info "header") and the payload key.
    func derive(salt: some DataProtocol, info: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: key, salt: salt, info: Array(info.utf8), outputByteCount: 32)
    }

    public static func == (lhs: FileKey, rhs: FileKey) -> Bool { lhs.key == rhs.key }
    public var description: String { "FileKey(<redacted>)" }
    public var debugDescription: String { description }
}
