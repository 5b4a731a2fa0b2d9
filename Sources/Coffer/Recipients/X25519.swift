import Crypto
import Foundation

/// age's native X25519 recipient and identity (c2sp.org/age, "The X25519
/// recipient type"): `age1…` public keys, `AGE-SECRET-KEY-1…` secret keys.
///
/// ```swift
/// let alice = X25519.Identity()
/// let shared = alice.recipient.description          // age1…: give it to whoever encrypts to Alice
/// let file = try Age.encrypt(Data("hello".utf8), to: [try X25519.Recipient(shared)])
/// let hello = try Age.decrypt(file, with: [alice])
/// let kept = alice.exportSecretKey()                // AGE-SECRET-KEY-1…: keep it secret
/// let again = try X25519.Identity(kept)
/// ```
public enum X25519 {
    static let stanzaType = "X25519"
    static let info = Array("age-encryption.org/v1/X25519".utf8)

    public struct Recipient: Coffer.Recipient, Hashable, CustomStringConvertible {
        let publicKey: Curve25519.KeyAgreement.PublicKey

        /// Parses `age1…`. Throws `malformed` naming what is wrong.
        public init(_ text: String) throws {
            guard let (hrp, data) = Bech32.decode(text), hrp == "age" else {
                throw CofferError(.malformed, "not an age X25519 recipient (expected \"age1…\")")
            }
            guard text == text.lowercased() else {
                throw CofferError(.malformed, "an age recipient must be lowercase")
            }
            guard data.count == 32 else {
                throw CofferError(.malformed, "an age X25519 recipient must hold 32 bytes, not \(data.count)")
            }
            let publicKey = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: data)
            guard !X25519.isLowOrder(publicKey) else {
                throw CofferError(
                    .malformed,
                    "this age recipient is a low-order X25519 point: anyone could open a file encrypted to it")
            }
            self.publicKey = publicKey
        }

        init(publicKey: Curve25519.KeyAgreement.PublicKey) { self.publicKey = publicKey }

        /// The `age1…` encoding.
        public var description: String { Bech32.encode(hrp: "age", data: publicKey.rawRepresentation) }
        public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.publicKey.rawRepresentation == rhs.publicKey.rawRepresentation
        }
        public func hash(into hasher: inout Hasher) { hasher.combine(publicKey.rawRepresentation) }

        public func wrap(_ fileKey: FileKey) throws -> [Stanza] {
            // A fresh ephemeral key per stanza and file, as the spec requires.
            let ephemeral = Curve25519.KeyAgreement.PrivateKey()
            let share = ephemeral.publicKey.rawRepresentation
            let secret = try ephemeral.sharedSecretFromKeyAgreement(with: publicKey)
            // An all-zero secret (a low-order recipient) would make the wrap key public.
            guard !secret.withUnsafeBytes({ $0.allSatisfy { $0 == 0 } }) else {
                throw CofferError(
                    .invalidArgument, "the recipient is a low-order X25519 point: anyone could open the file")
            }
            let wrapKey = secret.hkdfDerivedSymmetricKey(
                using: SHA256.self, salt: share + publicKey.rawRepresentation, sharedInfo: X25519.info,
                outputByteCount: 32)
            let body = try FileKeyWrap.seal(fileKey, with: wrapKey)
            return [Stanza(validated: X25519.stanzaType, arguments: [Base64.encodeString(share)], body: body)]
        }
    }

    public struct Identity: Coffer.Identity, CustomStringConvertible, CustomDebugStringConvertible {
        let privateKey: Curve25519.KeyAgreement.PrivateKey

        /// A new random identity.
        public init() { privateKey = Curve25519.KeyAgreement.PrivateKey() }

        /// Parses `AGE-SECRET-KEY-1…`. The reason in a thrown error never
        /// repeats the input.
        public init(_ text: String) throws {
            guard let (hrp, data) = Bech32.decode(text), hrp == "age-secret-key-" else {
                throw CofferError(.malformed, "not an age X25519 identity (expected \"AGE-SECRET-KEY-1…\")")
            }
            guard data.count == 32 else {
                throw CofferError(.malformed, "an age X25519 identity must hold 32 bytes")
            }
            privateKey = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: data)
        }

        public var recipient: Recipient { Recipient(publicKey: privateKey.publicKey) }

        /// The `AGE-SECRET-KEY-1…` encoding: an explicit export of the secret.
        public func exportSecretKey() -> String {
            Bech32.encode(hrp: "AGE-SECRET-KEY-", data: privateKey.rawRepresentation, uppercase: true)
        }

        public var description: String { "X25519.Identity(<redacted>)" }
        public var debugDescription: String { description }

        public func unwrap(_ stanzas: [Stanza]) throws -> FileKey? {
            for stanza in stanzas where stanza.type == X25519.stanzaType {
                guard stanza.arguments.count == 1 else {
                    throw CofferError(.malformedHeader, "an X25519 stanza must have exactly one argument")
                }
                guard let share = Base64.decode(stanza.arguments[0]), share.count == 32 else {
                    throw CofferError(.malformedHeader, "an X25519 stanza's share must be 32 bytes of canonical base64")
                }
                // Checked before decrypting, against partitioning oracles.
                guard stanza.body.count == FileKey.byteCount + 16 else {
                    throw CofferError(.malformedHeader, "an X25519 stanza's body must be 32 bytes")
                }
                let peer = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: share)
                guard let secret = try? privateKey.sharedSecretFromKeyAgreement(with: peer),
                    !secret.withUnsafeBytes({ $0.allSatisfy { $0 == 0 } })
                else {
                    // A low-order share makes the secret all zeros: the spec says abort.
                    throw CofferError(.malformedHeader, "an X25519 stanza's share is a low-order point")
                }
                let wrapKey = secret.hkdfDerivedSymmetricKey(
                    using: SHA256.self, salt: share + privateKey.publicKey.rawRepresentation,
                    sharedInfo: X25519.info, outputByteCount: 32)
                if let fileKey = try FileKeyWrap.open(stanza.body, with: wrapKey) { return fileKey }
            }
            return nil
        }
    }
}

extension X25519 {
    /// True when `point` is in the small subgroup (or a non-canonical
    /// encoding of such a point): every scalar then gives the all-zero
    /// shared secret, so one agreement with a throwaway scalar tells.
    static func isLowOrder(_ point: Curve25519.KeyAgreement.PublicKey) -> Bool {
        guard let secret = try? Curve25519.KeyAgreement.PrivateKey().sharedSecretFromKeyAgreement(with: point) else {
            return true
        }
        return secret.withUnsafeBytes { $0.allSatisfy { $0 == 0 } }
    }
}

/// ChaCha20-Poly1305 of a file key under a one-time wrap key. The nonce is
/// fixed at zero because each wrap key encrypts exactly one message.
enum FileKeyWrap {
    static func seal(_ fileKey: FileKey, with key: SymmetricKey) throws -> [UInt8] {
        let box = try fileKey.withUnsafeBytes {
            try ChaChaPoly.seal($0, using: key, nonce: ChaChaPoly.Nonce(data: [UInt8](repeating: 0, count: 12)))
        }
        return Array(box.ciphertext + box.tag)
    }

    /// nil when the body does not authenticate (not this identity's key);
    /// throws when it authenticates but is not a 16-byte file key.
    static func open(_ body: [UInt8], with key: SymmetricKey) throws -> FileKey? {
        guard body.count >= 16,
            let box = try? ChaChaPoly.SealedBox(
                nonce: ChaChaPoly.Nonce(data: [UInt8](repeating: 0, count: 12)),
                ciphertext: body.dropLast(16), tag: body.suffix(16)),
            let plaintext = try? ChaChaPoly.open(box, using: key)
        else { return nil }
        return try FileKey(unwrapped: plaintext)
    }
}
