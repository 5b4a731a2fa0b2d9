/// Comparison of secret bytes in time that does not depend on where they
/// differ: every byte is visited and the differences are OR-ed together.
/// The lengths are not treated as secret.
public enum ConstantTime {
    public static func equal(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
