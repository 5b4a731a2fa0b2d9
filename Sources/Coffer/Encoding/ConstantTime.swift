/// Comparison of secret bytes in time that does not depend on where they
/// differ: every byte is visited and the differences are OR-ed together.
/// The lengths are not treated as secret.
public enum ConstantTime {
    public static func equal(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        // Contiguous bytes (arrays, Data, digests' copies) are compared
        // through pointers: across a module boundary this function is not
        // specialised, and iterating generic collections costs a witness
        // call per byte.
        if let fast = a.withContiguousStorageIfAvailable({ a in
            b.withContiguousStorageIfAvailable { b in
                var difference: UInt8 = 0
                for index in 0..<a.count { difference |= a[index] ^ b[index] }
                return difference == 0
            }
        }), let equal = fast {
            return equal
        }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
