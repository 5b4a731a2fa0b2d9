#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Bytes that can be read at any offset, from several threads at once
/// (age's `ReaderAt`). The parallel payload pipeline and
/// `AgeRandomAccessFile` read through it.
public protocol PositionalByteSource: Sendable {
    /// Reads up to `buffer.count` bytes starting at `offset`; returns 0
    /// only at the end of the source.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int
}

extension PositionalByteSource {
    /// Fills `buffer` from `offset`, or throws when the source ends first
    /// (it shrank while it was read).
    public func readExactly(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws {
        var done = 0
        while done < buffer.count {
            let count = try read(
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), at: offset + Int64(done))
            guard count > 0 else {
                throw CofferError(
                    .io, "the input ended at byte \(offset + Int64(done)) while it was read: it shrank or changed")
            }
            done += count
        }
    }
}

/// `pread` on an open file descriptor, which it does not own or close.
public struct FileDescriptorReader: PositionalByteSource {
    public let fileDescriptor: Int32
    public init(fileDescriptor: Int32) { self.fileDescriptor = fileDescriptor }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard buffer.count > 0 else { return 0 }
        while true {
            let count = pread(fileDescriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw CofferError(.io, "read failed: \(String(cString: strerror(errno)))")
        }
    }
}

/// The bytes `[start, start + length)` of a positional source.
public struct PositionalSlice: Sendable {
    public let source: any PositionalByteSource
    public let start: Int64
    public let length: Int64

    public init(source: any PositionalByteSource, start: Int64, length: Int64) {
        self.source = source
        self.start = start
        self.length = length
    }

    /// The slice without its first `count` bytes.
    func dropping(_ count: Int64) -> PositionalSlice {
        PositionalSlice(source: source, start: start + count, length: max(0, length - count))
    }
}
