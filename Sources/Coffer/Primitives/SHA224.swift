/// SHA-224 (FIPS 180-4 §6.3): SHA-256's compression function with its own
/// initial value, truncated to 28 bytes. swift-crypto has no SHA-224, and
/// Apple's SecKey ECIES variants with SHA224 need it for the X9.63 KDF.
/// Tested with the NIST examples and against Python's hashlib.
package struct SHA224: Sendable {
    package static let byteCount = 28
    package static let blockByteCount = 64

    private var state: [UInt32] = [
        0xc105_9ed8, 0x367c_d507, 0x3070_dd17, 0xf70e_5939, 0xffc0_0b31, 0x6858_1511, 0x64f9_8fa7, 0xbefa_4fa4,
    ]
    private var buffer: [UInt8] = []
    private var length: UInt64 = 0

    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    package init() {}

    package static func hash(_ data: some Sequence<UInt8>) -> [UInt8] {
        var function = SHA224()
        function.update(data)
        return function.finalize()
    }

    package mutating func update(_ data: some Sequence<UInt8>) {
        let bytes = Array(data)
        length &+= UInt64(bytes.count)
        var index = 0
        if !buffer.isEmpty {
            let take = min(64 - buffer.count, bytes.count)
            buffer += bytes[0..<take]
            index = take
            guard buffer.count == 64 else { return }
            compress(buffer[...])
            buffer.removeAll(keepingCapacity: true)
        }
        while bytes.count - index >= 64 {
            compress(bytes[index..<(index + 64)])
            index += 64
        }
        buffer += bytes[index...]
    }

    package func finalize() -> [UInt8] {
        var copy = self
        let bitLength = length &* 8
        copy.buffer.append(0x80)
        if copy.buffer.count > 56 {
            copy.buffer += [UInt8](repeating: 0, count: 64 - copy.buffer.count)
            copy.compress(copy.buffer[...])
            copy.buffer = []
        }
        copy.buffer += [UInt8](repeating: 0, count: 56 - copy.buffer.count)
        copy.buffer += (0..<8).map { UInt8(truncatingIfNeeded: bitLength >> (56 - 8 * UInt64($0))) }
        copy.compress(copy.buffer[...])
        return copy.state.prefix(7).flatMap { word in
            (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * UInt32($0))) }
        }
    }

    private static func rotate(_ x: UInt32, _ n: UInt32) -> UInt32 { x >> n | x << (32 - n) }

    private mutating func compress(_ block: ArraySlice<UInt8>) {
        var w = [UInt32](repeating: 0, count: 64)
        let base = block.startIndex
        for t in 0..<16 {
            let i = base + 4 * t
            w[t] =
                UInt32(block[i]) << 24 | UInt32(block[i + 1]) << 16 | UInt32(block[i + 2]) << 8 | UInt32(block[i + 3])
        }
        for t in 16..<64 {
            let s0 = SHA224.rotate(w[t - 15], 7) ^ SHA224.rotate(w[t - 15], 18) ^ (w[t - 15] >> 3)
            let s1 = SHA224.rotate(w[t - 2], 17) ^ SHA224.rotate(w[t - 2], 19) ^ (w[t - 2] >> 10)
            w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, h) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
        for t in 0..<64 {
            let s1 = SHA224.rotate(e, 6) ^ SHA224.rotate(e, 11) ^ SHA224.rotate(e, 25)
            let choose = (e & f) ^ (~e & g)
            let t1 = h &+ s1 &+ choose &+ SHA224.k[t] &+ w[t]
            let s0 = SHA224.rotate(a, 2) ^ SHA224.rotate(a, 13) ^ SHA224.rotate(a, 22)
            let majority = (a & b) ^ (a & c) ^ (b & c)
            let t2 = s0 &+ majority
            (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
        }
        for (index, value) in [a, b, c, d, e, f, g, h].enumerated() { state[index] = state[index] &+ value }
    }
}
