import Crypto
import Foundation

/// age's tagged hybrid recipient type, mlkem768p256tag (c2sp.org/age, "The
/// tagged recipient types"): `age1tagpq1…` recipients, the post-quantum
/// public side of keys usually held in hardware.
///
/// HPKE base mode with KEM MLKEM768-P256 (draft-ietf-hpke-pq, KEM id
/// 0x0050), KDF HKDF-SHA256, AEAD ChaCha20-Poly1305, info
/// "age-encryption.org/mlkem768p256tag", empty AAD. The KEM:
///
///     ss_PQ, ct_PQ = ML-KEM-768.Encaps(ek_PQ)
///     ct_T = eph·G,  ss_T = x(eph·ek_T)
///     ss = SHA3-256(ss_PQ ‖ ss_T ‖ ct_T ‖ ek_T ‖ "MLKEM768-P256"),  enc = ct_PQ ‖ ct_T
///
/// The recipient is ek_PQ (1184 bytes) ‖ ek_T as an uncompressed point (65
/// bytes). The stanza tag is computed as Go age and rage compute it:
/// HKDF-Extract-SHA-256(enc ‖ SHA-256(ek_T)[:4], salt = info)[:4].
///
/// Coffer's software identity (`COFFER-TAGPQ-SECRET-KEY-1…`, see
/// docs/keys.md) holds the ML-KEM-768 seed and the P-256 scalar.
public enum MLKEM768P256Tag {
    static let stanzaType = "mlkem768p256tag"
    static let info = Data("age-encryption.org/mlkem768p256tag".utf8)
    static let kemID: UInt16 = 0x0050
    static let kemLabel = Data("MLKEM768-P256".utf8)
    static let recipientHRP = "age1tagpq"
    static let identityHRP = "COFFER-TAGPQ-SECRET-KEY-"
    static let mlkemPublicKeySize = 1184
    static let mlkemCiphertextSize = 1088
    static let pointSize = 65
    static let encapsulatedKeySize = mlkemCiphertextSize + pointSize

    static func combine(pq: SymmetricKey, traditional: SharedSecret, ciphertext: Data, recipientPoint: Data)
        -> SymmetricKey
    {
        var hash = SHA3_256()
        pq.withUnsafeBytes { hash.update(bufferPointer: $0) }
        traditional.withUnsafeBytes { hash.update(bufferPointer: $0) }
        hash.update(data: ciphertext)
        hash.update(data: recipientPoint)
        hash.update(data: kemLabel)
        return SymmetricKey(data: hash.finalize())
    }

    static func tag(encapsulatedKey: Data, recipientPoint: Data) -> [UInt8] {
        let ikm = encapsulatedKey + SHA256.hash(data: recipientPoint).prefix(4)
        return Array(HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: ikm), salt: info).prefix(4))
    }

    public struct Recipient: Coffer.Recipient, CustomStringConvertible {
        let mlkem: MLKEM768.PublicKey
        let point: P256.KeyAgreement.PublicKey

        /// Parses `age1tagpq1…`.
        public init(_ text: String) throws {
            guard let (hrp, data) = Bech32.decode(text), hrp == recipientHRP, text == text.lowercased() else {
                throw CofferError(
                    .malformed, "not an age tagged post-quantum recipient (expected lowercase \"age1tagpq1…\")")
            }
            guard data.count == mlkemPublicKeySize + pointSize else {
                throw CofferError(
                    .malformed,
                    "an age1tagpq1 recipient must hold 1249 bytes (ML-KEM-768 key and uncompressed P-256 point)")
            }
            do { mlkem = try MLKEM768.PublicKey(rawRepresentation: data.prefix(mlkemPublicKeySize)) } catch {
                throw CofferError(
                    .malformed, "the ML-KEM-768 half of an age1tagpq1 recipient is not a valid encapsulation key")
            }
            guard data[data.startIndex + mlkemPublicKeySize] == 0x04,
                let key = try? P256.KeyAgreement.PublicKey(x963Representation: data.suffix(pointSize))
            else {
                throw CofferError(
                    .malformed, "the P-256 half of an age1tagpq1 recipient is not an uncompressed point on the curve")
            }
            point = key
        }

        init(mlkem: MLKEM768.PublicKey, point: P256.KeyAgreement.PublicKey) {
            self.mlkem = mlkem
            self.point = point
        }

        var bytes: Data { mlkem.rawRepresentation + point.x963Representation }

        /// The `age1tagpq1…` encoding.
        public var description: String { Bech32.encode(hrp: recipientHRP, data: bytes) }

        public func wrap(_ fileKey: FileKey) throws -> [Stanza] {
            let pq = try mlkem.encapsulate()
            let ephemeral = P256.KeyAgreement.PrivateKey()
            let ctT = ephemeral.publicKey.x963Representation
            let ssT = try ephemeral.sharedSecretFromKeyAgreement(with: point)
            let recipientPoint = point.x963Representation
            let shared = combine(pq: pq.sharedSecret, traditional: ssT, ciphertext: ctT, recipientPoint: recipientPoint)
            let encapsulated = pq.encapsulated + ctT
            let context = HPKEBase.keySchedule(kem: kemID, sharedSecret: shared, info: info)
            let body = try fileKey.withUnsafeBytes { try HPKEBase.seal(Data($0), context: context) }
            let tag = MLKEM768P256Tag.tag(encapsulatedKey: encapsulated, recipientPoint: recipientPoint)
            return [
                Stanza(
                    validated: stanzaType,
                    arguments: [Base64.encodeString(tag), Base64.encodeString(encapsulated)],
                    body: Array(body))
            ]
        }
    }

    public struct Identity: Coffer.Identity, CustomStringConvertible, CustomDebugStringConvertible {
        let mlkem: MLKEM768.PrivateKey
        let p256: P256.KeyAgreement.PrivateKey

        /// A new random identity.
        public init() throws {
            mlkem = try MLKEM768.PrivateKey()
            p256 = P256.KeyAgreement.PrivateKey()
        }

        public init(mlkem: MLKEM768.PrivateKey, p256: P256.KeyAgreement.PrivateKey) {
            self.mlkem = mlkem
            self.p256 = p256
        }

        /// Parses `COFFER-TAGPQ-SECRET-KEY-1…`: Bech32 of the 64-byte
        /// ML-KEM-768 seed (d ‖ z) followed by the 32-byte P-256 scalar.
        public init(_ text: String) throws {
            guard let (hrp, data) = Bech32.decode(text), hrp == identityHRP.lowercased(), text == text.uppercased()
            else {
                throw CofferError(
                    .malformed, "not a Coffer tagged post-quantum identity (expected \"COFFER-TAGPQ-SECRET-KEY-1…\")")
            }
            guard data.count == 96,
                let mlkem = try? MLKEM768.PrivateKey(seedRepresentation: data.prefix(64), publicKey: nil),
                let p256 = try? P256.KeyAgreement.PrivateKey(rawRepresentation: data.suffix(32))
            else {
                throw CofferError(
                    .malformed,
                    "a Coffer tagged post-quantum identity must hold a 64-byte ML-KEM-768 seed and a valid 32-byte P-256 scalar"
                )
            }
            self.mlkem = mlkem
            self.p256 = p256
        }

        public var recipient: Recipient { Recipient(mlkem: mlkem.publicKey, point: p256.publicKey) }

        /// The `COFFER-TAGPQ-SECRET-KEY-1…` encoding: an explicit export of the secret.
        public func exportSecretKey() -> String {
            Bech32.encode(hrp: identityHRP, data: mlkem.seedRepresentation + p256.rawRepresentation, uppercase: true)
        }

        public var description: String { "MLKEM768P256Tag.Identity(<redacted>)" }
        public var debugDescription: String { description }

        public func unwrap(_ stanzas: [Stanza]) throws -> FileKey? {
            let recipientPoint = p256.publicKey.x963Representation
            for stanza in stanzas where stanza.type == stanzaType {
                let (tag, encapsulated) = try stanza.taggedShare(shareSize: encapsulatedKeySize)
                let enc = Data(encapsulated)
                guard MLKEM768P256Tag.tag(encapsulatedKey: enc, recipientPoint: recipientPoint) == tag else { continue }
                let ctT = enc.suffix(pointSize)
                guard ctT.first == 0x04, let share = try? P256.KeyAgreement.PublicKey(x963Representation: ctT) else {
                    throw CofferError(
                        .malformedHeader,
                        "an mlkem768p256tag stanza's P-256 share is not an uncompressed point on the curve")
                }
                guard let ssPQ = try? mlkem.decapsulate(enc.prefix(mlkemCiphertextSize)),
                    let ssT = try? p256.sharedSecretFromKeyAgreement(with: share)
                else { continue }
                let shared = combine(pq: ssPQ, traditional: ssT, ciphertext: Data(ctT), recipientPoint: recipientPoint)
                let context = HPKEBase.keySchedule(kem: kemID, sharedSecret: shared, info: info)
                guard let plaintext = try? HPKEBase.open(stanza.body, context: context) else { continue }
                return try FileKey(unwrapped: plaintext)
            }
            return nil
        }
    }
}
