import Crypto
import Foundation
import Testing

@testable import Coffer

@Suite struct Ed25519ConversionTests {
    /// The public map and the private map must agree: the X25519 public key
    /// of the converted private scalar is the converted public point.
    @Test func publicAndPrivateConversionsAgree() throws {
        for _ in 0..<50 {
            let key = Curve25519.Signing.PrivateKey()
            let fromPublic = try Ed25519Conversion.x25519PublicKey(fromEd25519: key.publicKey.rawRepresentation)
            let fromPrivate = try Ed25519Conversion.x25519PrivateKey(fromEd25519: key).publicKey
            #expect(fromPublic.rawRepresentation == fromPrivate.rawRepresentation)
        }
    }

    /// RFC 7748 §4.1: the Ed25519 base point (y = 4/5) maps to u = 9.
    @Test func basePointMapsToNine() throws {
        var base = [UInt8](repeating: 0x66, count: 32)
        base[0] = 0x58
        let u = try Ed25519Conversion.x25519PublicKey(fromEd25519: base).rawRepresentation
        #expect(Array(u) == [9] + [UInt8](repeating: 0, count: 31))
    }

    @Test func pointsOffTheCurveAndTheIdentityAreRefused() throws {
        // y = 2 gives x² = 3/(4d + 1), which is not a square mod p.
        var offCurve = [UInt8](repeating: 0, count: 32)
        offCurve[0] = 2
        var identity = [UInt8](repeating: 0, count: 32)
        identity[0] = 1
        var rejected = 0
        for candidate in [offCurve, identity, [UInt8](repeating: 0, count: 31)] {
            do { _ = try Ed25519Conversion.x25519PublicKey(fromEd25519: candidate) } catch is CofferError {
                rejected += 1
            }
        }
        #expect(rejected == 3)
    }

    /// The Montgomery arithmetic against small numbers computed by hand.
    @Test func montgomeryPowerSmallModulus() throws {
        let modulus = MontgomeryModulus(bigEndian: [0x01, 0x00, 0x01])!  // 65537
        #expect(
            modulus.power([3], exponent: [0x01, 0x00]) == [
                MontgomeryModulus.limbs(bigEndian: [0x00])[0] &+ powMod(3, 256, 65537)
            ])
        let big = MontgomeryModulus(bigEndian: [UInt8](repeating: 0xff, count: 24) + [0xfd])!
        // x^1 = x, and 2^8 = 256 in a 200-bit odd modulus.
        #expect(
            big.power(MontgomeryModulus.limbs(bigEndian: [0x12, 0x34], count: 4), exponent: [1])
                == MontgomeryModulus.limbs(bigEndian: [0x12, 0x34], count: 4))
        #expect(
            big.power(MontgomeryModulus.limbs(bigEndian: [2], count: 4), exponent: [8])
                == MontgomeryModulus.limbs(bigEndian: [1, 0], count: 4))
        #expect(MontgomeryModulus(bigEndian: [0x10]) == nil)
    }

    private func powMod(_ base: UInt64, _ exponent: UInt64, _ modulus: UInt64) -> UInt64 {
        var result: UInt64 = 1
        for _ in 0..<exponent { result = result * base % modulus }
        return result
    }
}
