import Foundation

/// A read-ahead buffer over a `ByteSource` that hands out lines (for the
/// age header and the armor) and then the bytes left after them.
struct LineReader<Source: ByteSource>: ByteSource {
    var source: Source
    private var buffer: [UInt8] = []
    private var start = 0
    private var sourceEnded = false

    init(_ source: Source) { self.source = source }

    /// Bytes held in the buffer, consumed or not (tests check it stays small).
    var bufferedByteCount: Int { buffer.count }

    /// Bytes buffered but not yet consumed.
    private var available: Int { buffer.count - start }

    private mutating func fill(minimum: Int) throws {
        // Drop what was consumed before growing, so the buffer holds at
        // most one line (bounded by the caller's limit) plus one read,
        // whatever the line endings.
        if start > 0 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        while available < minimum && !sourceEnded {
            let chunk = 4096
            let oldCount = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: chunk))
            let count = try buffer.withUnsafeMutableBytes {
                try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[oldCount...]))
            }
            buffer.removeLast(chunk - count)
            if count == 0 { sourceEnded = true }
        }
    }

    /// The next `count` bytes without consuming them (fewer at the end).
    mutating func peek(_ count: Int) throws -> ArraySlice<UInt8> {
        try fill(minimum: count)
        return buffer[start..<min(buffer.count, start + count)]
    }

    /// Reads one line up to and including LF. Returns the line without LF
    /// (a view into the buffer, valid until the next call) and whether an
    /// LF ended it (false only at the end of input). Returns nil at the end
    /// of input, or throws `LineTooLong` past `limit` bytes.
    mutating func readLine(limit: Int) throws -> (line: ArraySlice<UInt8>, terminated: Bool)? {
        var scanned = 0
        while true {
            if let newline = buffer[(start + scanned)...].firstIndex(of: 0x0A) {
                let line = buffer[start..<newline]
                guard line.count <= limit else { throw LineTooLong() }
                start = newline + 1
                return (line, true)
            }
            scanned = available
            guard scanned <= limit else { throw LineTooLong() }
            let before = available
            try fill(minimum: available + 1)
            if available == before {
                guard before > 0 else { return nil }
                let line = buffer[start...]
                start = buffer.count
                return (line, false)
            }
        }
    }

    struct LineTooLong: Error {}

    mutating func read(into destination: UnsafeMutableRawBufferPointer) throws -> Int {
        if available > 0 {
            let count = min(available, destination.count)
            buffer.withUnsafeBytes {
                destination.baseAddress!.copyMemory(from: $0.baseAddress! + start, byteCount: count)
            }
            start += count
            return count
        }
        guard !sourceEnded else { return 0 }
        return try source.read(into: destination)
    }
}
