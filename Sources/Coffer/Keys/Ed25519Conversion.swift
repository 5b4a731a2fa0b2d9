import Crypto
import Foundation

/// Ed25519 keys used for X25519, as age's ssh-ed25519 recipient type does
/// (and as RFC 7748 §4.1 maps the curves): the public point (x, y) becomes
/// u = (1 + y) / (1 − y); the private key becomes the scalar
/// SHA-512(seed)[:32], which X25519 clamps itself.
enum Ed25519Conversion {
    private static let field = MontgomeryModulus(bigEndian: [0x7f] + [UInt8](repeating: 0xff, count: 30) + [0xed])!
    // p − 2 and (p − 1)/2, big-endian.
    private static let inverseExponent: [UInt8] = [0x7f] + [UInt8](repeating: 0xff, count: 30) + [0xeb]
    private static let eulerExponent: [UInt8] = [0x3f] + [UInt8](repeating: 0xff, count: 30) + [0xf6]
    // d = −121665/121666 mod p (RFC 8032 §5.1).
    private static let d = MontgomeryModulus.limbs(
        bigEndian: Hex.decode("52036cee2b6ffe738cc740797779e89800700a4d4141d8ab75eb4dca135978a3")!)

    private static func add(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        var sum = [UInt64](repeating: 0, count: 4)
        var carry: UInt64 = 0
        for index in 0..<4 {
            let (s1, c1) = a[index].addingReportingOverflow(b[index])
            let (s2, c2) = s1.addingReportingOverflow(carry)
            sum[index] = s2
            carry = (c1 ? 1 : 0) | (c2 ? 1 : 0)
        }
        return field.reduceOnce(sum)  // a, b < p < 2^255: no carry out of 256 bits
    }

    private static func subtract(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        // a − b = a + (p − b)
        var negated = [UInt64](repeating: 0, count: 4)
        var borrow: UInt64 = 0
        for index in 0..<4 {
            let (d1, b1) = field.modulus[index].subtractingReportingOverflow(b[index])
            let (d2, b2) = d1.subtractingReportingOverflow(borrow)
            negated[index] = d2
            borrow = (b1 ? 1 : 0) | (b2 ? 1 : 0)
        }
        return add(a, field.reduceOnce(negated))
    }

    private static func multiply(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        field.fromMontgomery(field.multiply(field.toMontgomery(a), field.toMontgomery(b)))
    }

    /// The X25519 public key of an Ed25519 public key. Throws when the 32
    /// bytes are not a point on the curve, or are the identity (whose
    /// X25519 form, u = 0, would make every shared secret zero).
    static func x25519PublicKey(fromEd25519 bytes: some Collection<UInt8>) throws -> Curve25519.KeyAgreement.PublicKey {
        var encoded = Array(bytes)
        guard encoded.count == 32 else { throw CofferError(.malformed, "an Ed25519 public key is 32 bytes") }
        let sign = encoded[31] >> 7
        encoded[31] &= 0x7f
        // Little-endian y, reduced once (values in [p, 2^255) are the
        // non-canonical encodings of small y, which Go's edwards25519 accepts).
        let y = field.reduceOnce(MontgomeryModulus.limbs(bigEndian: encoded.reversed(), count: 4))
        let one: [UInt64] = [1, 0, 0, 0]
        let zero: [UInt64] = [0, 0, 0, 0]
        let ySquared = multiply(y, y)
        // x² = (y² − 1) / (d·y² + 1) must have a square root.
        let numerator = subtract(ySquared, one)
        let denominator = add(multiply(d, ySquared), one)
        let xSquared = multiply(numerator, field.power(denominator, exponent: inverseExponent))
        let legendre = field.power(xSquared, exponent: eulerExponent)
        guard legendre == one || (xSquared == zero && sign == 0) else {
            throw CofferError(.malformed, "the Ed25519 public key is not a point on the curve")
        }
        let oneMinusY = subtract(one, y)
        guard oneMinusY != zero else { throw CofferError(.malformed, "the Ed25519 public key is the identity point") }
        let u = multiply(add(one, y), field.power(oneMinusY, exponent: inverseExponent))
        let littleEndian = Array(MontgomeryModulus.bigEndianBytes(u, count: 32).reversed())
        return try Curve25519.KeyAgreement.PublicKey(rawRepresentation: littleEndian)
    }

    /// The X25519 private key of an Ed25519 private key (its 32-byte seed).
    static func x25519PrivateKey(fromEd25519 key: Curve25519.Signing.PrivateKey) throws
        -> Curve25519.KeyAgreement.PrivateKey
    {
        let scalar = SHA512.hash(data: key.rawRepresentation).prefix(32)
        return try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: Data(scalar))
    }
}
