/// Arithmetic modulo a fixed odd modulus in Montgomery form, over 64-bit
/// limbs (least significant first). It serves the two public-key
/// operations swift-crypto does not expose: the RSA public operation
/// behind age's OAEP with a label, and the Edwards-to-Montgomery map of
/// Ed25519 keys (mod 2^255 − 19).
///
/// Multiplication has no data-dependent branch or memory access: the final
/// subtraction is a masked select. `power` branches on the exponent's bits,
/// so it is only ever given public exponents (e, p − 2, (p − 1)/2).
package struct MontgomeryModulus: Sendable {
    let modulus: [UInt64]
    private let inverse: UInt64  // −modulus⁻¹ mod 2^64
    private let rSquared: [UInt64]
    private let one: [UInt64]  // R mod modulus

    var limbCount: Int { modulus.count }

    /// nil unless the modulus is odd and greater than 1.
    init?(bigEndian bytes: some Collection<UInt8>) {
        var limbs = MontgomeryModulus.limbs(bigEndian: bytes)
        while limbs.count > 1 && limbs.last == 0 { limbs.removeLast() }
        guard limbs[0] & 1 == 1, limbs.count > 1 || limbs[0] > 1 else { return nil }
        modulus = limbs
        var x: UInt64 = 1
        for _ in 0..<6 { x = x &* (2 &- limbs[0] &* x) }  // Newton: x = limbs[0]⁻¹ mod 2^64
        inverse = 0 &- x
        // R mod n, then R² mod n, by doubling 1 (64 × limbs) times each.
        var value = [UInt64](repeating: 0, count: limbs.count)
        value[0] = 1
        for _ in 0..<(64 * limbs.count) { value = MontgomeryModulus.double(value, modulo: limbs) }
        one = value
        for _ in 0..<(64 * limbs.count) { value = MontgomeryModulus.double(value, modulo: limbs) }
        rSquared = value
    }

    static func limbs(bigEndian bytes: some Collection<UInt8>, count: Int? = nil) -> [UInt64] {
        let array = Array(bytes)
        let needed = max(1, (array.count + 7) / 8)
        var limbs = [UInt64](repeating: 0, count: max(needed, count ?? 0))
        for (index, byte) in array.reversed().enumerated() {
            limbs[index / 8] |= UInt64(byte) << (UInt64(index % 8) * 8)
        }
        return limbs
    }

    static func bigEndianBytes(_ limbs: [UInt64], count: Int) -> [UInt8] {
        (0..<count).map { position in
            let index = count - 1 - position
            return index / 8 < limbs.count ? UInt8(truncatingIfNeeded: limbs[index / 8] >> (UInt64(index % 8) * 8)) : 0
        }
    }

    /// 2·value mod modulus, for value < modulus.
    private static func double(_ value: [UInt64], modulo modulus: [UInt64]) -> [UInt64] {
        var shifted = [UInt64](repeating: 0, count: value.count)
        var carry: UInt64 = 0
        for index in value.indices {
            shifted[index] = value[index] << 1 | carry
            carry = value[index] >> 63
        }
        return conditionalSubtract(shifted, extra: carry, modulus: modulus)
    }

    /// value − modulus when (extra·2^(64k) + value) ≥ modulus, else value;
    /// selected by mask, not by branch.
    private static func conditionalSubtract(_ value: [UInt64], extra: UInt64, modulus: [UInt64]) -> [UInt64] {
        var difference = [UInt64](repeating: 0, count: value.count)
        var borrow: UInt64 = 0
        for index in value.indices {
            let (d1, b1) = value[index].subtractingReportingOverflow(modulus[index])
            let (d2, b2) = d1.subtractingReportingOverflow(borrow)
            difference[index] = d2
            borrow = (b1 ? 1 : 0) | (b2 ? 1 : 0)
        }
        let mask = 0 &- ((extra | (borrow ^ 1)) & 1)
        return value.indices.map { (difference[$0] & mask) | (value[$0] & ~mask) }
    }

    /// a·b·R⁻¹ mod modulus (CIOS), for a, b < modulus.
    func multiply(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        let k = modulus.count
        var t = [UInt64](repeating: 0, count: k + 2)
        for i in 0..<k {
            var carry: UInt64 = 0
            for j in 0..<k {
                let (high, low) = a[j].multipliedFullWidth(by: b[i])
                let (s1, c1) = t[j].addingReportingOverflow(low)
                let (s2, c2) = s1.addingReportingOverflow(carry)
                t[j] = s2
                carry = high &+ (c1 ? 1 : 0) &+ (c2 ? 1 : 0)
            }
            let (top, topCarry) = t[k].addingReportingOverflow(carry)
            t[k] = top
            t[k + 1] = topCarry ? 1 : 0
            let m = t[0] &* inverse
            let (high0, low0) = m.multipliedFullWidth(by: modulus[0])
            let (_, c0) = t[0].addingReportingOverflow(low0)
            carry = high0 &+ (c0 ? 1 : 0)
            for j in 1..<max(k, 1) {
                let (high, low) = m.multipliedFullWidth(by: modulus[j])
                let (s1, c1) = t[j].addingReportingOverflow(low)
                let (s2, c2) = s1.addingReportingOverflow(carry)
                t[j - 1] = s2
                carry = high &+ (c1 ? 1 : 0) &+ (c2 ? 1 : 0)
            }
            let (s, c) = t[k].addingReportingOverflow(carry)
            t[k - 1] = s
            t[k] = t[k + 1] &+ (c ? 1 : 0)
            t[k + 1] = 0
        }
        return MontgomeryModulus.conditionalSubtract(Array(t[0..<k]), extra: t[k], modulus: modulus)
    }

    func toMontgomery(_ value: [UInt64]) -> [UInt64] { multiply(value, rSquared) }

    func fromMontgomery(_ value: [UInt64]) -> [UInt64] {
        var unit = [UInt64](repeating: 0, count: modulus.count)
        unit[0] = 1
        return multiply(value, unit)
    }

    /// True when value < modulus (both of limbCount limbs).
    func isReduced(_ value: [UInt64]) -> Bool {
        for index in stride(from: modulus.count - 1, through: 0, by: -1) where value[index] != modulus[index] {
            return value[index] < modulus[index]
        }
        return false
    }

    /// value mod modulus for value < 2·modulus.
    func reduceOnce(_ value: [UInt64]) -> [UInt64] {
        MontgomeryModulus.conditionalSubtract(value, extra: 0, modulus: modulus)
    }

    /// base^exponent mod modulus; base < modulus in normal form, the
    /// exponent public and big-endian. Returns normal form.
    func power(_ base: [UInt64], exponent: some Collection<UInt8>) -> [UInt64] {
        let baseM = toMontgomery(base)
        var accumulator = one
        for byte in exponent {
            for bit in stride(from: 7, through: 0, by: -1) {
                accumulator = multiply(accumulator, accumulator)
                if (byte >> UInt8(bit)) & 1 == 1 { accumulator = multiply(accumulator, baseM) }
            }
        }
        return fromMontgomery(accumulator)
    }
}
