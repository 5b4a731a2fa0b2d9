import Crypto
import CryptoExtras
import Foundation

/// RSA keys from their numbers, and RSAES-OAEP with SHA-256, MGF1-SHA-256
/// and a label (RFC 8017 §7.1), which age's ssh-rsa stanza needs and
/// swift-crypto's OAEP (no label) cannot express.
///
/// The private operation is swift-crypto's raw RSA (the RFC 9474 blind
/// signing primitive: BoringSSL's blinded, CRT, fault-checked
/// RSA_sign_raw). The public operation is `MontgomeryModulus.power` with the
/// public exponent. OAEP decoding runs in constant time up to its result.
package enum RSAKeys {
    static let minimumBits = 2048

    static func publicKey(n: [UInt8], e: [UInt8]) throws -> _RSA.Signing.PublicKey {
        guard n.count * 8 >= minimumBits - 7 else {
            throw CofferError(
                .unsupported, "the RSA key is \(bitLength(n)) bits; Coffer accepts \(minimumBits) bits or more")
        }
        do { return try _RSA.Signing.PublicKey(n: n, e: e) } catch {
            throw CofferError(.malformed, "the RSA public key's numbers are not a valid key")
        }
    }

    static func privateKey(n: [UInt8], e: [UInt8], d: [UInt8], p: [UInt8], q: [UInt8]) throws -> _RSA.Signing.PrivateKey
    {
        guard n.count * 8 >= minimumBits - 7 else {
            throw CofferError(
                .unsupported, "the RSA key is \(bitLength(n)) bits; Coffer accepts \(minimumBits) bits or more")
        }
        do { return try _RSA.Signing.PrivateKey(n: n, e: e, d: d, p: p, q: q) } catch {
            throw CofferError(.malformed, "the RSA private key's numbers are not a consistent key")
        }
    }

    static func bitLength(_ bigEndian: [UInt8]) -> Int {
        guard let first = bigEndian.first(where: { $0 != 0 }) else { return 0 }
        let leadingBytes = bigEndian.count - (bigEndian.firstIndex(of: first) ?? 0)
        return leadingBytes * 8 - first.leadingZeroBitCount
    }

    // MARK: OAEP with a label

    private static func mgf1(_ seed: some DataProtocol, length: Int) -> [UInt8] {
        var output: [UInt8] = []
        var counter: UInt32 = 0
        while output.count < length {
            var hash = SHA256()
            hash.update(data: Data(seed))
            hash.update(
                data: Data([
                    UInt8(counter >> 24), UInt8(counter >> 16 & 0xff), UInt8(counter >> 8 & 0xff),
                    UInt8(counter & 0xff),
                ]))
            output += hash.finalize()
            counter += 1
        }
        return Array(output.prefix(length))
    }

    /// The largest message OAEP-SHA-256 fits in a key of `modulusBytes`: k − 2h − 2.
    package static func oaepSHA256Limit(modulusBytes: Int) -> Int { modulusBytes - 2 * SHA256.byteCount - 2 }

    /// RSAES-OAEP-ENCRYPT with SHA-256, MGF1-SHA-256 and `label`.
    package static func oaepSHA256Encrypt(
        _ message: some Collection<UInt8>, label: some DataProtocol, to key: _RSA.Signing.PublicKey
    ) throws -> [UInt8] {
        let primitives = try key.getKeyPrimitives()
        let modulusBytes = Array(primitives.modulus.drop { $0 == 0 })
        let k = modulusBytes.count
        let hashLength = SHA256.byteCount
        guard message.count <= oaepSHA256Limit(modulusBytes: k) else {
            throw CofferError(
                .invalidArgument,
                "the message is \(message.count) bytes; OAEP-SHA-256 with a \(key.keySizeInBits)-bit key takes at most \(oaepSHA256Limit(modulusBytes: k)) (k − 2h − 2)"
            )
        }
        guard let modulus = MontgomeryModulus(bigEndian: modulusBytes) else {
            throw CofferError(.malformed, "the RSA modulus is not odd")
        }
        var db = Array(SHA256.hash(data: Data(label)))
        db += [UInt8](repeating: 0, count: k - message.count - 2 * hashLength - 2)
        db.append(0x01)
        db += message
        let seed = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let dbMask = mgf1(seed, length: k - hashLength - 1)
        let maskedDB = zip(db, dbMask).map { $0 ^ $1 }
        let seedMask = mgf1(maskedDB, length: hashLength)
        let maskedSeed = zip(seed, seedMask).map { $0 ^ $1 }
        let encoded = [0] + maskedSeed + maskedDB  // < 2^(8(k−1)) ≤ n
        let exponent = Array(primitives.publicExponent)
        let result = modulus.power(
            MontgomeryModulus.limbs(bigEndian: encoded, count: modulus.limbCount), exponent: exponent)
        return MontgomeryModulus.bigEndianBytes(result, count: k)
    }

    /// RSAES-OAEP-DECRYPT with SHA-256, MGF1-SHA-256 and `label`. Every
    /// failure is the same error, raised after the same work.
    package static func oaepSHA256Decrypt(
        _ ciphertext: some Collection<UInt8>, label: some DataProtocol, with key: _RSA.Signing.PrivateKey
    ) throws -> [UInt8] {
        let failure = CofferError(
            .payloadAuthenticationFailed, "RSA-OAEP decryption failed (wrong key, or damaged ciphertext)")
        let k = (key.keySizeInBits + 7) / 8
        let hashLength = SHA256.byteCount
        guard ciphertext.count == k, k >= 2 * hashLength + 2 else { throw failure }
        let raw: [UInt8]
        do {
            let blind = try _RSA.BlindSigning.PrivateKey<SHA384>(unsafeDERRepresentation: key.derRepresentation)
            raw = Array(try blind.blindSignature(for: Array(ciphertext)).rawRepresentation)
        } catch {
            throw failure  // ciphertext ≥ n
        }
        guard raw.count == k else { throw failure }
        let maskedSeed = raw[1...hashLength]
        let maskedDB = raw[(hashLength + 1)...]
        let seedMask = mgf1(maskedDB, length: hashLength)
        let seed = zip(maskedSeed, seedMask).map { $0 ^ $1 }
        let dbMask = mgf1(seed, length: k - hashLength - 1)
        let db = zip(maskedDB, dbMask).map { $0 ^ $1 }
        let expectedHash = Array(SHA256.hash(data: Data(label)))
        // bad accumulates any mismatch; the separator search never branches on secret bytes.
        var bad = UInt8(raw[0])
        for index in 0..<hashLength { bad |= db[index] ^ expectedHash[index] }
        var found: UInt8 = 0  // 0xff once the 0x01 separator was seen
        var separator = 0
        for index in hashLength..<db.count {
            let byte = db[index]
            let isOne = constantTimeIsZero(byte ^ 0x01)
            let isZero = constantTimeIsZero(byte)
            let takeThis = isOne & ~found
            separator |= Int(takeThis & 1) * index  // at most one index is taken
            bad |= ~found & ~isOne & ~isZero  // a byte other than 0 before the separator
            found |= isOne
        }
        bad |= ~found
        guard bad == 0 else { throw failure }
        return Array(db[(separator + 1)...])
    }

    /// 0xff when value is zero, else 0x00, without a branch.
    private static func constantTimeIsZero(_ value: UInt8) -> UInt8 {
        let wide = UInt32(value)
        return UInt8(truncatingIfNeeded: ((wide &- 1) >> 8) & 0xff)
    }
}

/// Elliptic-curve keys from the encodings OpenSSH and Apple use.
enum ECKeys {
    static func publicKey(curve: String, x963 point: some Collection<UInt8>) throws -> AsymmetricPublicKey {
        let bytes = Array(point)
        do {
            switch curve {
            case "nistp256": return .p256(try P256.Signing.PublicKey(x963Representation: bytes))
            case "nistp384": return .p384(try P384.Signing.PublicKey(x963Representation: bytes))
            case "nistp521": return .p521(try P521.Signing.PublicKey(x963Representation: bytes))
            default: break
            }
        } catch {
            throw CofferError(.malformed, "the \(curve) public key is not a point on the curve")
        }
        throw CofferError(.unsupported, "curve \(curve) is not supported")
    }

    static func privateKey(curve: String, scalar: [UInt8]) throws -> AsymmetricPrivateKey {
        func padded(_ size: Int) throws -> [UInt8] {
            guard scalar.count <= size else { throw CofferError(.malformed, "the \(curve) private scalar is too long") }
            return [UInt8](repeating: 0, count: size - scalar.count) + scalar
        }
        do {
            switch curve {
            case "nistp256": return .p256(try P256.Signing.PrivateKey(rawRepresentation: try padded(32)))
            case "nistp384": return .p384(try P384.Signing.PrivateKey(rawRepresentation: try padded(48)))
            case "nistp521": return .p521(try P521.Signing.PrivateKey(rawRepresentation: try padded(66)))
            default: break
            }
        } catch let error as CofferError {
            throw error
        } catch {
            throw CofferError(.malformed, "the \(curve) private scalar is out of range")
        }
        throw CofferError(.unsupported, "curve \(curve) is not supported")
    }
}
