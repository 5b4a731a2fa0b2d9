import Crypto
import Foundation

/// HPKE (RFC 9180) base mode, single shot, with KDF HKDF-SHA256 and AEAD
/// ChaCha20-Poly1305, over any KEM whose encapsulation the caller has
/// already run. swift-crypto's `HPKE` covers the DHKEM and X-Wing KEMs;
/// this is for the KEMs it does not have (MLKEM768-P256). The key schedule
/// is checked against swift-crypto's own HPKE in the tests.
///
/// Nonces come from the key schedule; no caller ever supplies one.
package enum HPKEBase {
    static let kdfID: UInt16 = 0x0001  // HKDF-SHA256
    static let aeadID: UInt16 = 0x0003  // ChaCha20Poly1305

    struct Context {
        fileprivate let key: SymmetricKey
        fileprivate let baseNonce: Data
    }

    private static func bigEndian(_ value: UInt16) -> Data { Data([UInt8(value >> 8), UInt8(value & 0xff)]) }

    private static func suiteID(kem: UInt16) -> Data {
        Data("HPKE".utf8) + bigEndian(kem) + bigEndian(kdfID) + bigEndian(aeadID)
    }

    private static func labeledExtract(suite: Data, salt: Data, label: String, ikm: some DataProtocol)
        -> HashedAuthenticationCode<SHA256>
    {
        let labeled = Data("HPKE-v1".utf8) + suite + Data(label.utf8) + Data(ikm)
        return HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: labeled), salt: salt)
    }

    private static func labeledExpand(
        suite: Data, prk: HashedAuthenticationCode<SHA256>, label: String, info: Data, length: Int
    ) -> SymmetricKey {
        let labeled = bigEndian(UInt16(length)) + Data("HPKE-v1".utf8) + suite + Data(label.utf8) + info
        return HKDF<SHA256>.expand(pseudoRandomKey: prk, info: labeled, outputByteCount: length)
    }

    /// KeySchedule(mode_base, shared_secret, info, psk = "", psk_id = "").
    static func keySchedule(kem: UInt16, sharedSecret: SymmetricKey, info: Data) -> Context {
        let suite = suiteID(kem: kem)
        let pskIDHash = labeledExtract(suite: suite, salt: Data(), label: "psk_id_hash", ikm: Data())
        let infoHash = labeledExtract(suite: suite, salt: Data(), label: "info_hash", ikm: info)
        let context = Data([0x00]) + Data(pskIDHash) + Data(infoHash)
        let secret = sharedSecret.withUnsafeBytes { salt in
            labeledExtract(suite: suite, salt: Data(salt), label: "secret", ikm: Data())
        }
        let key = labeledExpand(suite: suite, prk: secret, label: "key", info: context, length: 32)
        let nonce = labeledExpand(suite: suite, prk: secret, label: "base_nonce", info: context, length: 12)
        return Context(key: key, baseNonce: nonce.withUnsafeBytes { Data($0) })
    }

    /// The first (sequence number 0) message of a context: its nonce is the base nonce.
    static func seal(_ plaintext: some DataProtocol, context: Context) throws -> Data {
        let box = try ChaChaPoly.seal(
            plaintext, using: context.key, nonce: ChaChaPoly.Nonce(data: context.baseNonce), authenticating: Data())
        var sealed = Data(capacity: plaintext.count + 16)
        sealed.append(box.ciphertext)
        sealed.append(box.tag)
        return sealed
    }

    /// Opens the first message of a context; throws when it does not authenticate.
    static func open(_ ciphertext: some DataProtocol, context: Context) throws -> Data {
        let bytes = Data(ciphertext)
        guard bytes.count >= 16 else { throw CryptoKitError.incorrectParameterSize }
        let box = try ChaChaPoly.SealedBox(
            nonce: ChaChaPoly.Nonce(data: context.baseNonce),
            ciphertext: bytes.prefix(bytes.count - 16), tag: bytes.suffix(16))
        return try ChaChaPoly.open(box, using: context.key, authenticating: Data())
    }
}
