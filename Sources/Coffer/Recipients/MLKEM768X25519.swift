import Crypto
import Foundation

/// age's post-quantum hybrid recipient type, MLKEM768-X25519 (X-Wing)
/// (c2sp.org/age, "The MLKEM768-X25519 (i.e. X-Wing) hybrid post-quantum
/// recipient type"): `age1pq1…` recipients, `AGE-SECRET-KEY-PQ-1…` identities.
///
/// The file key is sealed with HPKE (RFC 9180) base mode: KEM X-Wing,
/// KDF HKDF-SHA256, AEAD ChaCha20-Poly1305, info
/// "age-encryption.org/mlkem768x25519", empty AAD; all from swift-crypto.
public enum MLKEM768X25519 {
    static let stanzaType = "mlkem768x25519"
    static let info = Data("age-encryption.org/mlkem768x25519".utf8)
    static let suite = HPKE.Ciphersuite(kem: .XWingMLKEM768X25519, kdf: .HKDF_SHA256, aead: .chaChaPoly)
    static let encapsulatedKeySize = 1120
    static let recipientHRP = "age1pq"
    static let identityHRP = "AGE-SECRET-KEY-PQ-"

    public struct Recipient: Coffer.Recipient, CustomStringConvertible {
        let publicKey: XWingMLKEM768X25519.PublicKey

        /// Parses `age1pq1…`. Throws `malformed` naming what is wrong.
        public init(_ text: String) throws {
            guard let (hrp, data) = Bech32.decode(text), hrp == recipientHRP, text == text.lowercased() else {
                throw CofferError(.malformed, "not an age post-quantum recipient (expected lowercase \"age1pq1…\")")
            }
            do { publicKey = try XWingMLKEM768X25519.PublicKey(rawRepresentation: data) } catch {
                throw CofferError(
                    .malformed, "an age1pq1 recipient must hold a 1216-byte ML-KEM-768 + X25519 public key")
            }
            // The X25519 half (the last 32 bytes) must not be a low-order point.
            guard let half = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: data.suffix(32)),
                !X25519.isLowOrder(half)
            else {
                throw CofferError(.malformed, "the X25519 half of this age1pq1 recipient is a low-order point")
            }
        }

        init(publicKey: XWingMLKEM768X25519.PublicKey) { self.publicKey = publicKey }

        /// The `age1pq1…` encoding.
        public var description: String { Bech32.encode(hrp: recipientHRP, data: publicKey.rawRepresentation) }

        public func wrap(_ fileKey: FileKey) throws -> [Stanza] {
            // The X25519 half must give a non-zero secret (checked at parse
            // time too; repeated here for keys that came another way).
            let half = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: publicKey.rawRepresentation.suffix(32))
            guard !X25519.isLowOrder(half) else {
                throw CofferError(.invalidArgument, "the X25519 half of the recipient is a low-order point")
            }
            var sender = try HPKE.Sender(recipientKey: publicKey, ciphersuite: suite, info: info)
            let body = try fileKey.withUnsafeBytes { try sender.seal($0, authenticating: Data()) }
            return [
                Stanza(
                    validated: stanzaType, arguments: [Base64.encodeString(sender.encapsulatedKey)], body: Array(body))
            ]
        }
    }

    public struct Identity: Coffer.Identity, CustomStringConvertible, CustomDebugStringConvertible {
        let privateKey: XWingMLKEM768X25519.PrivateKey

        /// A new random identity.
        public init() throws { privateKey = try XWingMLKEM768X25519.PrivateKey.generate() }

        /// Parses `AGE-SECRET-KEY-PQ-1…` (a 32-byte seed). The reason in a
        /// thrown error never repeats the input.
        public init(_ text: String) throws {
            guard let (hrp, data) = Bech32.decode(text), hrp == identityHRP.lowercased(), text == text.uppercased()
            else {
                throw CofferError(.malformed, "not an age post-quantum identity (expected \"AGE-SECRET-KEY-PQ-1…\")")
            }
            guard data.count == 32 else {
                throw CofferError(.malformed, "an age post-quantum identity must hold a 32-byte seed")
            }
            privateKey = try XWingMLKEM768X25519.PrivateKey(seedRepresentation: data, publicKey: nil)
        }

        public var recipient: Recipient { Recipient(publicKey: privateKey.publicKey) }

        /// The `AGE-SECRET-KEY-PQ-1…` encoding: an explicit export of the secret.
        public func exportSecretKey() -> String {
            Bech32.encode(hrp: identityHRP, data: privateKey.seedRepresentation, uppercase: true)
        }

        public var description: String { "MLKEM768X25519.Identity(<redacted>)" }
        public var debugDescription: String { description }

        public func unwrap(_ stanzas: [Stanza]) throws -> FileKey? {
            for stanza in stanzas where stanza.type == stanzaType {
                guard stanza.arguments.count == 1 else {
                    throw CofferError(.malformedHeader, "an mlkem768x25519 stanza must have exactly one argument")
                }
                guard let encapsulated = Base64.decode(stanza.arguments[0]), encapsulated.count == encapsulatedKeySize
                else {
                    throw CofferError(
                        .malformedHeader, "an mlkem768x25519 stanza's share must be 1120 bytes of canonical base64")
                }
                // Checked before decrypting, against partitioning oracles.
                guard stanza.body.count == FileKey.byteCount + 16 else {
                    throw CofferError(.malformedHeader, "an mlkem768x25519 stanza's body must be 32 bytes")
                }
                // The X25519 half of the share (its last 32 bytes) must not be
                // a low-order point: the test kit treats an all-zero X25519
                // secret as a malformed header, as for X25519 stanzas. Any
                // clamped scalar times a low-order point is zero, so a
                // throwaway scalar tells.
                let share = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: encapsulated.suffix(32))
                guard !X25519.isLowOrder(share) else {
                    throw CofferError(.malformedHeader, "an mlkem768x25519 stanza's X25519 share is a low-order point")
                }
                // A share or body that does not open is "not for this identity".
                let fileKey = try FileKey.openHPKE(stanza.body) {
                    try HPKE.Recipient(
                        privateKey: privateKey, ciphersuite: suite, info: info, encapsulatedKey: Data(encapsulated))
                }
                if let fileKey { return fileKey }
            }
            return nil
        }
    }
}
