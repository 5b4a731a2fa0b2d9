import Coffer
import Foundation

/// NaCl's `crypto_secretbox` (XSalsa20 and Poly1305), for **opening
/// only**: swift-crypto has neither, and AeroGear-Crypto 0.2.2 and later
/// sealed data with it. Written from the specifications — Salsa20 and
/// HSalsa20/XSalsa20 (D. J. Bernstein, "Salsa20 specification" and
/// "Extending the Salsa20 nonce"), Poly1305 (RFC 8439 §2.5) — and proven
/// against PyNaCl (libsodium) in `XSalsa20Poly1305Tests`.
///
/// The box is the 16-byte Poly1305 tag, then the ciphertext (libsodium's
/// "easy" layout, and AeroGear's). The tag is checked in constant time
/// before a byte is decrypted. Everything here runs in time that depends
/// on the lengths only, never on key or data bytes.
enum SecretBox {
    static let keySize = 32
    static let nonceSize = 24
    static let tagSize = 16

    /// The plaintext of `box` (tag ‖ ciphertext) under `key` and `nonce`,
    /// or `payloadAuthenticationFailed`.
    static func open(_ box: some Collection<UInt8>, nonce: some Collection<UInt8>, key: some Collection<UInt8>)
        throws -> [UInt8]
    {
        let box = Array(box)
        let nonce = Array(nonce)
        let key = Array(key)
        guard key.count == keySize else {
            throw CofferError(.invalidArgument, "a secretbox key is 32 bytes, not \(key.count)")
        }
        guard nonce.count == nonceSize else {
            throw CofferError(.invalidArgument, "a secretbox nonce is 24 bytes, not \(nonce.count)")
        }
        guard box.count >= tagSize else {
            throw CofferError(.malformed, "a secretbox is at least its 16-byte tag, not \(box.count) bytes")
        }
        let subkey = HSalsa20.hash(key: key, input: Array(nonce[0..<16]))
        var stream = Salsa20Stream(key: subkey, nonce: Array(nonce[16..<24]))
        // The first 32 bytes of the stream are the one-time Poly1305 key;
        // the rest encrypts the message.
        let first = stream.nextBlock()
        let tag = Poly1305.tag(Array(box[tagSize...]), key: Array(first[0..<32]))
        guard ConstantTime.equal(tag, Array(box[0..<tagSize])) else {
            throw CofferError(
                .payloadAuthenticationFailed, "the secretbox does not authenticate: wrong key or nonce, or damaged data"
            )
        }
        // Message byte i takes key-stream byte 32 + i: block 0 after the Poly1305 key, then whole blocks.
        var plaintext = Array(box[tagSize...])
        var block = first
        var position = 32
        for index in plaintext.indices {
            if position == 64 {
                block = stream.nextBlock()
                position = 0
            }
            plaintext[index] ^= block[position]
            position += 1
        }
        return plaintext
    }
}

/// The Salsa20 core's 20 rounds over 16 little-endian words.
enum Salsa20Core {
    static let sigma: [UInt32] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574]  // "expand 32-byte k"

    /// The words after 20 rounds (10 column and row double rounds), before
    /// any feed-forward.
    static func rounds(_ input: [UInt32]) -> [UInt32] {
        var x = input
        @inline(__always) func quarter(_ a: Int, _ b: Int, _ c: Int, _ d: Int) {
            x[b] ^= (x[a] &+ x[d]).rotated(7)
            x[c] ^= (x[b] &+ x[a]).rotated(9)
            x[d] ^= (x[c] &+ x[b]).rotated(13)
            x[a] ^= (x[d] &+ x[c]).rotated(18)
        }
        for _ in 0..<10 {
            quarter(0, 4, 8, 12)
            quarter(5, 9, 13, 1)
            quarter(10, 14, 2, 6)
            quarter(15, 3, 7, 11)
            quarter(0, 1, 2, 3)
            quarter(5, 6, 7, 4)
            quarter(10, 11, 8, 9)
            quarter(15, 12, 13, 14)
        }
        return x
    }

    /// The state of a 32-byte key and 16 bytes of nonce and counter.
    static func state(key: [UInt8], input: [UInt8]) -> [UInt32] {
        let k = words(key)
        let n = words(input)
        return [
            sigma[0], k[0], k[1], k[2], k[3], sigma[1], n[0], n[1], n[2], n[3], sigma[2], k[4], k[5], k[6], k[7],
            sigma[3],
        ]
    }

    static func words(_ bytes: [UInt8]) -> [UInt32] {
        stride(from: 0, to: bytes.count, by: 4).map { start in
            UInt32(bytes[start]) | UInt32(bytes[start + 1]) << 8 | UInt32(bytes[start + 2]) << 16
                | UInt32(bytes[start + 3]) << 24
        }
    }

    static func bytes(_ words: [UInt32]) -> [UInt8] {
        words.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } }
    }
}

/// HSalsa20: a 32-byte key and a 16-byte input to a 32-byte subkey.
enum HSalsa20 {
    static func hash(key: [UInt8], input: [UInt8]) -> [UInt8] {
        let x = Salsa20Core.rounds(Salsa20Core.state(key: key, input: input))
        return Salsa20Core.bytes([x[0], x[5], x[10], x[15], x[6], x[7], x[8], x[9]])
    }
}

/// Salsa20's key stream under a 32-byte key and an 8-byte nonce, block by
/// block from counter 0.
struct Salsa20Stream {
    let key: [UInt8]
    let nonce: [UInt8]
    var counter: UInt64 = 0

    init(key: [UInt8], nonce: [UInt8]) {
        self.key = key
        self.nonce = nonce
    }

    mutating func nextBlock() -> [UInt8] {
        let counterBytes = (0..<8).map { UInt8(truncatingIfNeeded: counter >> (8 * $0)) }
        let input = Salsa20Core.state(key: key, input: nonce + counterBytes)
        let output = Salsa20Core.rounds(input)
        counter &+= 1
        return Salsa20Core.bytes(zip(output, input).map { $0 &+ $1 })
    }
}

/// Poly1305 (RFC 8439 §2.5) in five 26-bit limbs: every message byte takes
/// the same path, whatever its value.
enum Poly1305 {
    static func tag(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        func le32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            let base = bytes.startIndex
            return UInt32(bytes[base]) | UInt32(bytes[base + 1]) << 8 | UInt32(bytes[base + 2]) << 16
                | UInt32(bytes[base + 3]) << 24
        }
        let mask: UInt32 = 0x3ff_ffff
        // r, clamped as the specification says.
        let r0 = le32(key[0..<4]) & 0x3ff_ffff
        let r1 = (le32(key[3..<7]) >> 2) & 0x3ff_ff03
        let r2 = (le32(key[6..<10]) >> 4) & 0x3ff_c0ff
        let r3 = (le32(key[9..<13]) >> 6) & 0x3f0_3fff
        let r4 = (le32(key[12..<16]) >> 8) & 0x00f_ffff
        let (s1, s2, s3, s4) = (r1 &* 5, r2 &* 5, r3 &* 5, r4 &* 5)
        var (h0, h1, h2, h3, h4): (UInt32, UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0, 0)

        var offset = 0
        // One block buffer for the whole message, filled in place.
        var block = [UInt8](repeating: 0, count: 16)
        while offset < message.count {
            let count = min(16, message.count - offset)
            for index in 0..<16 { block[index] = index < count ? message[offset + index] : 0 }
            // A full block's 2^128 bit; a short last block has its 1 byte after the message instead.
            var high: UInt32 = 1 << 24
            if count < 16 {
                block[count] = 1
                high = 0
            }
            let m = block[...]
            h0 &+= le32(m[0..<4]) & mask
            h1 &+= (le32(m[3..<7]) >> 2) & mask
            h2 &+= (le32(m[6..<10]) >> 4) & mask
            h3 &+= (le32(m[9..<13]) >> 6) & mask
            h4 &+= (le32(m[12..<16]) >> 8) | high

            func w(_ value: UInt32) -> UInt64 { UInt64(value) }
            let d0 = w(h0) * w(r0) + w(h1) * w(s4) + w(h2) * w(s3) + w(h3) * w(s2) + w(h4) * w(s1)
            let d1 = w(h0) * w(r1) + w(h1) * w(r0) + w(h2) * w(s4) + w(h3) * w(s3) + w(h4) * w(s2)
            let d2 = w(h0) * w(r2) + w(h1) * w(r1) + w(h2) * w(r0) + w(h3) * w(s4) + w(h4) * w(s3)
            let d3 = w(h0) * w(r3) + w(h1) * w(r2) + w(h2) * w(r1) + w(h3) * w(r0) + w(h4) * w(s4)
            let d4 = w(h0) * w(r4) + w(h1) * w(r3) + w(h2) * w(r2) + w(h3) * w(r1) + w(h4) * w(r0)
            // Each limb keeps its low 26 bits and carries the rest into the
            // next; the top limb's carry wraps round times 5 (2^130 ≡ 5).
            var carry: UInt64 = 0
            func reduce(_ d: UInt64) -> UInt32 {
                let sum = d + carry
                carry = sum >> 26
                return UInt32(truncatingIfNeeded: sum) & mask
            }
            h0 = reduce(d0)
            h1 = reduce(d1)
            h2 = reduce(d2)
            h3 = reduce(d3)
            h4 = reduce(d4)
            h0 &+= UInt32(truncatingIfNeeded: carry) &* 5
            h1 &+= h0 >> 26
            h0 &= mask
            offset += count
        }

        // Fully carry h, then compute h - p and keep it when it is not negative.
        var c = h1 >> 26
        h1 &= mask
        h2 &+= c
        c = h2 >> 26
        h2 &= mask
        h3 &+= c
        c = h3 >> 26
        h3 &= mask
        h4 &+= c
        c = h4 >> 26
        h4 &= mask
        h0 &+= c &* 5
        c = h0 >> 26
        h0 &= mask
        h1 &+= c

        var g0 = h0 &+ 5
        c = g0 >> 26
        g0 &= mask
        var g1 = h1 &+ c
        c = g1 >> 26
        g1 &= mask
        var g2 = h2 &+ c
        c = g2 >> 26
        g2 &= mask
        var g3 = h3 &+ c
        c = g3 >> 26
        g3 &= mask
        var g4 = h4 &+ c &- (1 << 26)
        // All ones when g4 did not borrow (h ≥ p): take g; else keep h.
        let select = (g4 >> 31) &- 1
        g0 &= select
        g1 &= select
        g2 &= select
        g3 &= select
        g4 &= select
        let keep = ~select
        h0 = (h0 & keep) | g0
        h1 = (h1 & keep) | g1
        h2 = (h2 & keep) | g2
        h3 = (h3 & keep) | g3
        h4 = (h4 & keep) | g4

        // h mod 2^128, plus s.
        let t0 = h0 | (h1 << 26)
        let t1 = (h1 >> 6) | (h2 << 20)
        let t2 = (h2 >> 12) | (h3 << 14)
        let t3 = (h3 >> 18) | (h4 << 8)
        var f = UInt64(t0) + UInt64(le32(key[16..<20]))
        let o0 = UInt32(truncatingIfNeeded: f)
        f = UInt64(t1) + UInt64(le32(key[20..<24])) + (f >> 32)
        let o1 = UInt32(truncatingIfNeeded: f)
        f = UInt64(t2) + UInt64(le32(key[24..<28])) + (f >> 32)
        let o2 = UInt32(truncatingIfNeeded: f)
        f = UInt64(t3) + UInt64(le32(key[28..<32])) + (f >> 32)
        let o3 = UInt32(truncatingIfNeeded: f)
        return Salsa20Core.bytes([o0, o1, o2, o3])
    }
}

extension UInt32 {
    @inline(__always) func rotated(_ count: UInt32) -> UInt32 { (self << count) | (self >> (32 - count)) }
}
