import Foundation

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

/// The same for two inputs at once (a value and its context).
@inlinable
func withContiguousBytes<R>(
    of first: some DataProtocol, and second: some DataProtocol,
    _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> R
) rethrows -> R {
    try withContiguousBytes(of: first) { first in try withContiguousBytes(of: second) { try body(first, $0) } }
}
