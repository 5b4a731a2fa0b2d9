import Crypto
import Foundation

extension KeyAgreement {
    /// The message format of the seed's ECDH flow, as CryptoKit writes it:
    /// AES-256-GCM under the key that `KeyAgreement.agree` derived (ECDH,
    /// then the X9.63 KDF or HKDF, 32 bytes), as
    ///
    ///     nonce (12, random) ‖ ciphertext ‖ tag (16)
    ///
    /// which is `AES.GCM.SealedBox.combined`. The nonce is always random;
    /// no caller chooses it. Each side derives the same key from its own
    /// private key and the other's public key (and the same shared info).
    ///
    /// ```swift
    /// let key = try KeyAgreement.agree(privateKey: mine, peer: theirs, size: 32)
    /// let box = try KeyAgreement.Box.seal(message, using: key)
    /// let opened = try KeyAgreement.Box.open(box, using: key)
    /// ```
    public enum Box {
        /// The fixed cost of a box: nonce and tag.
        public static let overhead = 28

        /// Seals `plaintext` under `key` (32 bytes) with a fresh random nonce.
        public static func seal(_ plaintext: some DataProtocol, using key: SymmetricKey) throws -> [UInt8] {
            guard key.bitCount == 256 else {
                throw CofferError(.invalidArgument, "a box key is 32 bytes, not \(key.bitCount / 8)")
            }
            guard let combined = try AES.GCM.seal(plaintext, using: key).combined else {
                throw CofferError(.invalidArgument, "AES-GCM gave no combined box")
            }
            return Array(combined)
        }

        /// Opens a box: `malformed` when it is shorter than 28 bytes,
        /// `payloadAuthenticationFailed` when it does not authenticate (another
        /// key, peer or shared info, or altered bytes). No plaintext is
        /// released unless the whole box authenticated.
        public static func open(_ box: some DataProtocol, using key: SymmetricKey) throws -> Data {
            let bytes = Array(box)
            guard bytes.count >= overhead else {
                throw CofferError(
                    .malformed, "the box is \(bytes.count) bytes; a box has at least \(overhead) (nonce and tag)")
            }
            do {
                return try AES.GCM.open(try AES.GCM.SealedBox(combined: bytes), using: key)
            } catch {
                throw CofferError(
                    .payloadAuthenticationFailed,
                    "the box does not authenticate: another key, peer or shared info, or altered bytes")
            }
        }
    }
}
