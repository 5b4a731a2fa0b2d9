import Coffer
import CofferStore
import Foundation

/// The records `coffer store put` reads: one JSON object (up to 16 MiB), or
/// JSON lines of any length, read a few MiB at a time, each piece's lines
/// parsed on every core at once and handed on in batches.
struct RecordStream {
    let table: StoreSchema.Table
    let batch: Int
    /// The longest line taken, so that a file with no newline cannot grow the buffer without end.
    static let longestLine = 64 << 20
    static let readSize = 4 << 20

    /// Calls `write` with each batch of `batch` records in order (the last
    /// may be smaller). A bad line stops the stream before its batch: every
    /// batch before it was written, and the error names the line.
    func forEachBatch(of input: Input, _ write: ([StoreRecord]) throws -> Void) throws {
        var source = input.source
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: Self.readSize)
        var linesBefore = 0
        var carry: [StoreRecord] = []
        var decided = false
        var ended = false
        while !ended {
            let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { ended = true } else { pending += buffer[..<count] }
            if !decided {
                // JSON lines when the first line is a whole object (a
                // pretty-printed object's first line is a lone brace).
                guard let newline = pending.firstIndex(of: 0x0A) ?? (ended ? pending.count : nil) else {
                    guard pending.count <= Self.longestLine else {
                        throw CofferError(.invalidArgument, "line 1 is longer than 64 MiB")
                    }
                    continue
                }
                let first = pending[..<newline]
                let whole = first.withUnsafeBufferPointer { (try? JSONLines.object($0)) != nil }
                let blank = first.allSatisfy { [0x20, 0x09, 0x0D].contains($0) }
                if !whole && !blank {
                    return try write([try single(input, pending, ended: ended, source: &source)])
                }
                if !blank { decided = true }
            }
            guard let cut = ended ? pending.count : pending.lastIndex(of: 0x0A).map({ $0 + 1 }) else {
                guard pending.count <= Self.longestLine else {
                    throw CofferError(.invalidArgument, "line \(linesBefore + 1) is longer than 64 MiB")
                }
                continue
            }
            let (lines, last) = pending.withUnsafeBufferPointer { Self.lines($0[..<cut], firstNumber: linesBefore + 1) }
            let results = pending.withUnsafeBufferPointer { parse(lines, $0) }
            linesBefore = last
            pending.removeFirst(cut)
            for (index, result) in results.enumerated() {
                switch result {
                case .success(let record): carry.append(record)
                case .failure(let error):
                    try flush(&carry, full: true, write)
                    throw error.prefixed("line \(lines[index].number)")
                }
            }
            try flush(&carry, full: true, write)
        }
        try flush(&carry, full: false, write)
    }

    /// Writes the full batches of `carry` (and with `full` false, the rest).
    func flush(_ carry: inout [StoreRecord], full: Bool, _ write: ([StoreRecord]) throws -> Void) throws {
        var start = 0
        while carry.count - start >= batch || (!full && start < carry.count) {
            try write(Array(carry[start..<min(carry.count, start + batch)]))
            start += batch
        }
        carry.removeFirst(min(start, carry.count))
    }

    /// A single object spread over lines: the whole input, at most 16 MiB.
    func single(_ input: Input, _ pending: [UInt8], ended: Bool, source: inout FileDescriptorSource) throws
        -> StoreRecord
    {
        var all = pending
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !ended {
            let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { break }
            all += buffer[..<count]
            guard all.count <= 16 << 20 else {
                throw CLIFailure("the records \(input.name) are one object larger than 16 MiB")
            }
        }
        return try all.withUnsafeBufferPointer { bytes in
            guard String(validating: bytes, as: UTF8.self) != nil else {
                throw CofferError(.malformed, "the records are not UTF-8 JSON")
            }
            return try StoreJSON.record(bytes, table: table)
        }
    }

    /// The non-blank lines of `bytes`, trimmed, with their line numbers
    /// (from `firstNumber`); and the number of the last line.
    static func lines(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, firstNumber: Int) -> (
        [(range: Range<Int>, number: Int)], Int
    ) {
        func space(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var lines: [(range: Range<Int>, number: Int)] = []
        var start = bytes.startIndex
        var number = firstNumber - 1
        while start < bytes.endIndex {
            number += 1
            var end = start
            while end < bytes.endIndex && bytes[end] != 0x0A { end += 1 }
            var (low, high) = (start, end)
            while low < high && space(bytes[low]) { low += 1 }
            while high > low && space(bytes[high - 1]) { high -= 1 }
            if low < high { lines.append((low..<high, number)) }
            start = end + 1
        }
        return (lines, number)
    }

    /// Every line as a record, the lines shared among the cores.
    func parse(_ lines: [(range: Range<Int>, number: Int)], _ bytes: UnsafeBufferPointer<UInt8>)
        -> [Result<StoreRecord, CofferError>]
    {
        nonisolated(unsafe) let bytes = bytes
        let table = table
        let chunk = 2048
        return Array(unsafeUninitializedCapacity: lines.count) { buffer, initialized in
            nonisolated(unsafe) let results = buffer
            DispatchQueue.concurrentPerform(iterations: (lines.count + chunk - 1) / chunk) { part in
                for index in part * chunk..<min(lines.count, (part + 1) * chunk) {
                    let line = UnsafeBufferPointer(rebasing: bytes[lines[index].range])
                    let result: Result<StoreRecord, CofferError>
                    if String(validating: line, as: UTF8.self) == nil {
                        result = .failure(CofferError(.malformed, "the record is not UTF-8 JSON"))
                    } else {
                        do { result = .success(try StoreJSON.record(line, table: table)) } catch let error
                            as CofferError
                        {
                            result = .failure(error)
                        } catch {
                            result = .failure(CofferError(.malformed, "\(error)"))
                        }
                    }
                    (results.baseAddress! + index).initialize(to: result)
                }
            }
            initialized = lines.count
        }
    }
}
