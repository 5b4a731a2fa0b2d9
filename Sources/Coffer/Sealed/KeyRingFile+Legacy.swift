import Crypto
import CryptoExtras
import Foundation

/// Reading key ring files of versions 1 and 2, which sealed the ring
/// directly under a key from the secret:
///
///     "CKR2" ‖ kind (0 raw key, 1 scrypt, 2 PBKDF2-SHA-256)
///     ‖ parameters (scrypt: log2 N, r, p — 1 byte each; PBKDF2: rounds, 4 bytes; raw key: none)
///     ‖ salt 16 ‖ check 16 ‖ ring id 16 ‖ generation 8 (big-endian)
///     ‖ nonce 12 ‖ AES-256-GCM-SIV(key ring) ‖ tag 16     (AAD = everything before the nonce)
///
/// base = the password's KDF output, or HKDF-SHA-256(KEK, salt, info
/// "coffer key ring v2 kek") for a raw key. The wrapping key is
/// HKDF-SHA-256(base, info "coffer key ring v2 wrap"); the check is
/// HKDF-SHA-256(base, info "coffer key ring v2 check")[:16]. Version 1
/// ("CKR1") has no ring id, no generation and no salt for a raw key, and
/// "v1" in the labels; it reads as generation 0 with an id derived from
/// its header.
///
/// A file read here becomes a version 3 file in memory: a new data key and
/// one slot. A password slot reuses the old salt and KDF output, so the
/// password is stretched once.
extension KeyRingFile {
    struct LegacyLayout {
        static let magics = [Array("CKR2".utf8), Array("CKR1".utf8)]
        let version: Int
        let kdf: PasswordKDF?
        let saltRange: Range<Int>
        let checkRange: Range<Int>
        let headerEnd: Int

        init(_ bytes: [UInt8]) throws {
            guard bytes.count > 5, LegacyLayout.magics.contains(Array(bytes.prefix(4))) else {
                throw CofferError(.malformed, "not a Coffer key ring (it starts with \"CKR3\", \"CKR2\" or \"CKR1\")")
            }
            version = bytes[3] == UInt8(ascii: "2") ? 2 : 1
            var offset = 5
            switch bytes[4] {
            case 0: kdf = nil
            case 1:
                guard bytes.count >= 8 else { throw CofferError(.malformed, "the key ring file is truncated") }
                kdf = .scrypt(logN: bytes[5], r: bytes[6], p: bytes[7])
                offset = 8
            case 2:
                guard bytes.count >= 9 else { throw CofferError(.malformed, "the key ring file is truncated") }
                kdf = .pbkdf2SHA256(rounds: bytes[5..<9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
                offset = 9
            default:
                throw CofferError(.unsupported, "key ring protection kind \(bytes[4]) is not supported")
            }
            let saltCount = kdf == nil && version == 1 ? 0 : 16
            saltRange = offset..<(offset + saltCount)
            checkRange = saltRange.upperBound..<(saltRange.upperBound + 16)
            headerEnd = checkRange.upperBound + (version == 2 ? 16 + 8 : 0)
            guard bytes.count >= headerEnd else { throw CofferError(.malformed, "the key ring file is truncated") }
        }

        func ringID(_ bytes: [UInt8]) -> [UInt8] {
            guard version == 2 else {
                // A version 1 header never changes between writes: it names the ring.
                return Array(SHA256.hash(data: Array("coffer key ring v1 id".utf8) + bytes[..<headerEnd]).prefix(16))
            }
            return Array(bytes[checkRange.upperBound..<(checkRange.upperBound + 16)])
        }

        func generation(_ bytes: [UInt8]) -> UInt64 {
            guard version == 2 else { return 0 }
            return bytes[(headerEnd - 8)..<headerEnd].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }

        static func keys(base: SymmetricKey, version: Int) -> (wrap: SymmetricKey, check: [UInt8]) {
            let wrap = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: base, info: Array("coffer key ring v\(version) wrap".utf8), outputByteCount: 32)
            let check = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: base, info: Array("coffer key ring v\(version) check".utf8), outputByteCount: 16)
            return (wrap, check.withUnsafeBytes { Array($0) })
        }
    }

    static func readLegacy(_ bytes: [UInt8], secret: UnlockSecret) throws -> KeyRingFile {
        let layout = try LegacyLayout(bytes)
        guard bytes.count >= layout.headerEnd + 12 + 16 else {
            throw CofferError(.malformed, "the key ring file is truncated")
        }
        let salt = Array(bytes[layout.saltRange])
        let check = Array(bytes[layout.checkRange])
        let material = try secret.material()
        let base: SymmetricKey
        switch (material, layout.kdf) {
        case let (.password(password), .some(kdf)): base = try kdf.derive(password: password.revealed(), salt: salt)
        case let (.key(key), nil):
            base =
                layout.version == 2
                ? HKDF<SHA256>.deriveKey(
                    inputKeyMaterial: key, salt: salt, info: Array("coffer key ring v2 kek".utf8), outputByteCount: 32)
                : key
        case (.key, .some):
            throw CofferError(.invalidArgument, "this key ring is locked with a password, not a key file")
        case (.wrapper, _):
            throw CofferError(.invalidArgument, "an older key ring file is locked with a password or a key file")
        case (.password, nil):
            throw CofferError(.invalidArgument, "this key ring is locked with a key file, not a password")
        }
        let (wrap, expected) = LegacyLayout.keys(base: base, version: layout.version)
        // The check is compared in constant time.
        guard ConstantTime.equal(expected, check) else {
            throw CofferError(
                .wrongPassword,
                layout.kdf == nil ? "the key file does not unlock this key ring" : "wrong password for this key ring")
        }
        let header = Array(bytes[..<layout.headerEnd])
        let body: Data
        do {
            body = try AES.GCM._SIV.open(
                AES.GCM._SIV.SealedBox(combined: bytes[layout.headerEnd...]), using: wrap, authenticating: header)
        } catch {
            throw CofferError(
                .payloadAuthenticationFailed,
                "the key ring file was changed: its sealed body does not open under the right password")
        }
        let ringID = layout.ringID(bytes)
        let dataKey = SymmetricKey(size: .bits256)
        let binding = KeyRingFile.magic + ringID
        let slot: KeySlot
        if case .key(let key) = material {
            // A KEK slot is cheap (HKDF): a fresh salt.
            slot = try KeySlot.wrap(
                dataKey, base: key, kdf: nil, salt: SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) },
                binding: binding, nonce: AES.GCM._SIV.Nonce())
        } else {
            slot = try KeySlot.wrap(
                dataKey, base: base, kdf: layout.kdf, salt: salt, binding: binding, nonce: AES.GCM._SIV.Nonce())
        }
        return KeyRingFile(
            keyRing: try KeyRing.deserialize(Array(body)), ringID: ringID, generation: layout.generation(bytes),
            slots: [slot], dataKey: dataKey)
    }
}
