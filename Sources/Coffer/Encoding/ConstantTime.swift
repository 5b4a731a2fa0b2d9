import Foundation

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

/// Calls `body` with the bytes of `data` in one contiguous buffer: in
/// place when they already are (`Data`, `[UInt8]`), else copied once. Public
/// generic entry points use it so that the work behind them is
/// non-generic, and fast when called from another module.
@inlinable
func withContiguousBytes<R>(of data: some DataProtocol, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    if let result = try data.withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) {
        return result
    }
    return try Array(data).withUnsafeBytes(body)
}
