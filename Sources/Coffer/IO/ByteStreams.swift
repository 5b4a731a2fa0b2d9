import CCofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where bytes come from: a file, a pipe, memory.
///
/// `read(into:)` fills as much of `buffer` as it can without waiting for
/// more than one underlying read, and returns 0 only at the end.
public protocol ByteSource {
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int

    /// When the rest of the source can also be read by offset (a regular
    /// file): where it is. The payload pipeline then lets every core read
    /// its own chunks. The default is nil.
    func positionalRemainder() -> PositionalSlice?

    /// Called after `slice`, which `positionalRemainder()` returned, was
    /// read by offset: checks it is still whole and moves past it.
    mutating func finishPositionalRead(_ slice: PositionalSlice) throws
}

/// Where bytes go. `write(_:)` writes all of `bytes` or throws.
public protocol ByteSink {
    mutating func write(_ bytes: UnsafeRawBufferPointer) throws
}

extension ByteSource {
    public func positionalRemainder() -> PositionalSlice? { nil }
    public mutating func finishPositionalRead(_ slice: PositionalSlice) throws {}

    /// Reads until `buffer` is full or the source ends; returns the count.
    public mutating func readFully(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        var filled = 0
        while filled < buffer.count {
            let count = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
            if count == 0 { break }
            filled += count
        }
        return filled
    }
}

extension ByteSink {
    public mutating func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }
}

/// Reads an open file descriptor, which it does not own or close.
public struct FileDescriptorSource: ByteSource {
    public let fileDescriptor: Int32
    public init(fileDescriptor: Int32) { self.fileDescriptor = fileDescriptor }

    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard buffer.count > 0 else { return 0 }
        while true {
            #if canImport(Darwin)
            let count = Darwin.read(fileDescriptor, buffer.baseAddress, buffer.count)
            #else
            let count = Glibc.read(fileDescriptor, buffer.baseAddress, buffer.count)
            #endif
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw CofferError(.io, "read failed: \(String(cString: strerror(errno)))")
        }
    }
}

extension FileDescriptorSource {
    /// When the descriptor is a regular file: the bytes from its current
    /// offset to its end, which can be read in parallel with `pread`.
    public func positionalRemainder() -> PositionalSlice? {
        var info = stat()
        guard fstat(fileDescriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        let offset = lseek(fileDescriptor, 0, SEEK_CUR)
        guard offset >= 0, Int64(info.st_size) >= Int64(offset) else { return nil }
        return PositionalSlice(
            source: FileDescriptorReader(fileDescriptor: fileDescriptor), start: Int64(offset),
            length: Int64(info.st_size) - Int64(offset))
    }

    /// Checks that the file still has the size it had, and leaves the
    /// offset at its end as `read` would.
    public mutating func finishPositionalRead(_ slice: PositionalSlice) throws {
        var info = stat()
        guard fstat(fileDescriptor, &info) == 0, Int64(info.st_size) == slice.start + slice.length else {
            throw CofferError(.io, "the input file changed size while it was read")
        }
        lseek(fileDescriptor, off_t(slice.start + slice.length), SEEK_SET)
    }
}

/// Writes to an open file descriptor, which it does not own or close.
public struct FileDescriptorSink: ByteSink {
    public let fileDescriptor: Int32
    /// Every this many bytes (0: never), ask the kernel to start writing
    /// what was just written to disk (Linux's sync_file_range). AtomicFile's
    /// sink does, since its commit fsyncs: the disk then works while the
    /// stream is still being made, instead of all at the end.
    let writebackInterval: Int
    private var unwritten = 0

    public init(fileDescriptor: Int32) { self.init(fileDescriptor: fileDescriptor, writebackInterval: 0) }

    package init(fileDescriptor: Int32, writebackInterval: Int) {
        self.fileDescriptor = fileDescriptor
        self.writebackInterval = writebackInterval
    }

    public mutating func write(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            #if canImport(Darwin)
            let count = Darwin.write(fileDescriptor, bytes.baseAddress! + offset, bytes.count - offset)
            #else
            let count = Glibc.write(fileDescriptor, bytes.baseAddress! + offset, bytes.count - offset)
            #endif
            if count < 0 {
                if errno == EINTR { continue }
                throw CofferError(.io, "write failed: \(String(cString: strerror(errno)))")
            }
            offset += count
        }
        guard writebackInterval > 0 else { return }
        unwritten += bytes.count
        if unwritten >= writebackInterval {
            // The range just written ends at the file offset; a failure only
            // means the final fsync does all the work, as it would anyway.
            let end = lseek(fileDescriptor, 0, SEEK_CUR)
            if end >= Int64(unwritten) {
                _ = coffer_start_writeback(fileDescriptor, Int64(end) - Int64(unwritten), Int64(unwritten))
            }
            unwritten = 0
        }
    }
}

/// Reads from bytes in memory.
public struct BufferSource: ByteSource {
    private let bytes: [UInt8]
    private var offset = 0
    public init(_ bytes: some Sequence<UInt8>) { self.bytes = Array(bytes) }

    public mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, bytes.count - offset)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress! + offset, byteCount: count)
        }
        offset += count
        return count
    }
}

/// Collects written bytes in memory.
public struct BufferSink: ByteSink {
    public private(set) var bytes: [UInt8] = []
    public init() {}
    public mutating func write(_ bytes: UnsafeRawBufferPointer) throws {
        self.bytes.append(contentsOf: bytes)
    }
}
