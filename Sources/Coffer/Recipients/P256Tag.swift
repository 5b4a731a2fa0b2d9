import Crypto
import Foundation

/// age's tagged P-256 recipient type, p256tag (c2sp.org/age, "The tagged
/// recipient types"): `age1tag1…` recipients, the public side of keys
/// usually held in hardware (the Secure Enclave's curve). Coffer's software
/// identity holds the P-256 private key itself, for servers and tests.
///
/// HPKE base mode: KEM DHKEM(P-256, HKDF-SHA256), KDF HKDF-SHA256, AEAD
/// ChaCha20-Poly1305, info "age-encryption.org/p256tag", empty AAD. The
/// stanza's tag lets an identity find its stanza without decrypting:
/// tag = HKDF-Extract-SHA-256(enc ‖ SHA-256(recipient)[:4], salt = label)[:4].
public enum P256Tag {
    static let stanzaType = "p256tag"
    static let label = Data("age-encryption.org/p256tag".utf8)
    static let suite = HPKE.Ciphersuite(kem: .P256_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .chaChaPoly)
    static let hrp = "age1tag"

    static func tag(encapsulatedKey: Data, recipient compressed: Data) -> [UInt8] {
        let ikm = encapsulatedKey + SHA256.hash(data: compressed).prefix(4)
        return Array(HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: ikm), salt: label).prefix(4))
    }

    public struct Recipient: Coffer.Recipient, CustomStringConvertible {
        let publicKey: P256.KeyAgreement.PublicKey

        /// Parses `age1tag1…` (a compressed P-256 point).
        public init(_ text: String) throws {
            guard let (decodedHRP, data) = Bech32.decode(text), decodedHRP == hrp, text == text.lowercased() else {
                throw CofferError(.malformed, "not an age tagged P-256 recipient (expected lowercase \"age1tag1…\")")
            }
            guard data.count == 33, let key = try? P256.KeyAgreement.PublicKey(compressedRepresentation: data) else {
                throw CofferError(
                    .malformed, "an age1tag1 recipient must hold a 33-byte compressed P-256 point on the curve")
            }
            publicKey = key
        }

        public init(publicKey: P256.KeyAgreement.PublicKey) { self.publicKey = publicKey }

        /// The `age1tag1…` encoding.
        public var description: String { Bech32.encode(hrp: hrp, data: publicKey.compressedRepresentation) }

        public func wrap(_ fileKey: FileKey) throws -> [Stanza] {
            var sender = try HPKE.Sender(recipientKey: publicKey, ciphersuite: suite, info: label)
            let body = try fileKey.withUnsafeBytes { try sender.seal($0, authenticating: Data()) }
            let tag = P256Tag.tag(
                encapsulatedKey: sender.encapsulatedKey, recipient: publicKey.compressedRepresentation)
            return [
                Stanza(
                    validated: stanzaType,
                    arguments: [Base64.encodeString(tag), Base64.encodeString(sender.encapsulatedKey)],
                    body: Array(body))
            ]
        }
    }

    public struct Identity: Coffer.Identity, CustomStringConvertible, CustomDebugStringConvertible {
        let privateKey: P256.KeyAgreement.PrivateKey

        public init(privateKey: P256.KeyAgreement.PrivateKey) { self.privateKey = privateKey }

        /// A P-256 private key in PEM: PKCS#8 ("PRIVATE KEY") or SEC 1
        /// ("EC PRIVATE KEY"). The reason in a thrown error never repeats it.
        public init(pem: String) throws {
            do { privateKey = try P256.KeyAgreement.PrivateKey(pemRepresentation: pem) } catch {
                throw CofferError(
                    .malformed, "not a P-256 private key in PEM (PKCS#8 \"PRIVATE KEY\" or SEC 1 \"EC PRIVATE KEY\")")
            }
        }

        /// The 97 bytes `04 ‖ X ‖ Y ‖ D` that SecKeyCopyExternalRepresentation exports.
        public init(externalRepresentation bytes: some ContiguousBytes) throws {
            do { privateKey = try P256.KeyAgreement.PrivateKey(x963Representation: bytes) } catch {
                throw CofferError(.malformed, "not a 97-byte P-256 private key (04 ‖ X ‖ Y ‖ D)")
            }
        }

        public var recipient: Recipient { Recipient(publicKey: privateKey.publicKey) }

        public var description: String { "P256Tag.Identity(<redacted>)" }
        public var debugDescription: String { description }

        public func unwrap(_ stanzas: [Stanza]) throws -> FileKey? {
            let compressed = privateKey.publicKey.compressedRepresentation
            for stanza in stanzas where stanza.type == stanzaType {
                let (tag, encapsulated) = try stanza.taggedShare(shareSize: 65)
                // Another recipient's stanza: skip it without any ECDH.
                guard P256Tag.tag(encapsulatedKey: Data(encapsulated), recipient: compressed) == tag else { continue }
                let fileKey = try FileKey.openHPKE(stanza.body) {
                    try HPKE.Recipient(
                        privateKey: privateKey, ciphersuite: suite, info: label, encapsulatedKey: Data(encapsulated))
                }
                if let fileKey { return fileKey }
            }
            return nil
        }
    }
}
