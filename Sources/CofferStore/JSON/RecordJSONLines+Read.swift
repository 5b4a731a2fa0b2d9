import Coffer
import Foundation

extension RecordJSONLines {
    /// The reader thread's loop: pieces of whole lines, parsed on every
    /// core (before the store is open, into fields; after, into records
    /// of its table) and handed to the writer. Throws the input's own
    /// errors; a bad line is handed over with the records before it.
    func read(_ source: inout FileDescriptorSource) throws {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: Self.readSize)
        var linesBefore = 0
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
                let whole = first.withUnsafeBufferPointer { (try? RecordJSONParser.object($0)) != nil }
                let blank = first.allSatisfy { [0x20, 0x09, 0x0D].contains($0) }
                if !whole && !blank {
                    let parsed = try single(pending, ended: ended, source: &source)
                    markFirstRecord(nil)
                    guard let table = awaitTable() else { return }
                    _ = hand(Piece(records: [try RecordJSON.record(parsed, table: table)], failure: nil))
                    return
                }
                decided = !blank
            }
            guard let cut = ended ? pending.count : pending.lastIndex(of: 0x0A).map({ $0 + 1 }) else {
                guard pending.count <= Self.longestLine else {
                    throw CofferError(.invalidArgument, "line \(linesBefore + 1) is longer than 64 MiB")
                }
                continue
            }
            let (lines, last) = pending.withUnsafeBufferPointer { Self.lines($0[..<cut], firstNumber: linesBefore + 1) }
            linesBefore = last
            // One check of the piece's UTF-8 (it ends at a newline, so no
            // character is cut); only a piece that fails is checked line by
            // line, to name the line.
            let results = try pending.withUnsafeBufferPointer {
                try records(
                    lines, $0,
                    checkingEachLine: String(validating: UnsafeBufferPointer(rebasing: $0[..<cut]), as: UTF8.self)
                        == nil)
            }
            pending.removeFirst(cut)
            guard let results else { return }
            var piece = Piece(records: [], failure: nil)
            piece.records.reserveCapacity(results.count)
            for (index, result) in results.enumerated() {
                switch result {
                case .success(let record): piece.records.append(record)
                case .failure(let error): piece.failure = error.prefixed("line \(lines[index].number)")
                }
                if piece.failure != nil { break }
            }
            guard hand(piece), piece.failure == nil else { return }
        }
    }

    /// The lines (UTF-8 checked already, unless `checkingEachLine`) as
    /// records: parsed at once when the table is known, else
    /// parsed into fields while the store opens, then made records. Nil
    /// when the writer stopped first.
    func records(
        _ lines: [(range: Range<Int>, number: Int)], _ bytes: UnsafeBufferPointer<UInt8>, checkingEachLine: Bool
    ) throws -> [Result<StoreRecord, CofferError>]? {
        nonisolated(unsafe) let bytes = bytes
        func parse(_ index: Int) throws -> RecordJSONParser.Parsed {
            let line = UnsafeBufferPointer(rebasing: bytes[lines[index].range])
            guard !checkingEachLine || String(validating: line, as: UTF8.self) != nil else {
                throw CofferError(.malformed, "the record is not UTF-8 JSON")
            }
            return try RecordJSONParser.object(line)
        }
        if let table = knownTable {
            return Self.parallelMap(lines.count) { index in
                Self.result { try RecordJSON.record(try parse($0), table: table) }(index)
            }
        }
        let parsed = Self.parallelMap(lines.count) { index in Self.result { try parse($0) }(index) }
        if case .failure(let error)? = parsed.first, let first = lines.first {
            markFirstRecord(error.prefixed("line \(first.number)"))
        } else {
            markFirstRecord(nil)
        }
        guard let table = awaitTable() else { return nil }
        return Self.parallelMap(parsed.count) { index in
            parsed[index].flatMap { fields in Self.result { _ in try RecordJSON.record(fields, table: table) }(index) }
        }
    }

    static func result<T>(_ body: @escaping (Int) throws -> T) -> (Int) -> Result<T, CofferError> {
        { index in
            do { return .success(try body(index)) } catch let error as CofferError {
                return .failure(error)
            } catch {
                return .failure(CofferError(.malformed, "\(error)"))
            }
        }
    }

    /// `transform` of 0..<count, shared among the cores in runs of 2,048.
    static func parallelMap<T>(_ count: Int, _ transform: (Int) -> T) -> [T] {
        let chunk = 2048
        return withoutActuallyEscaping(transform) { transform in
            nonisolated(unsafe) let transform = transform
            return Array(unsafeUninitializedCapacity: count) { buffer, initialized in
                nonisolated(unsafe) let results = buffer
                DispatchQueue.concurrentPerform(iterations: (count + chunk - 1) / chunk) { part in
                    for index in part * chunk..<min(count, (part + 1) * chunk) {
                        (results.baseAddress! + index).initialize(to: transform(index))
                    }
                }
                initialized = count
            }
        }
    }

    /// A single object spread over lines: the whole input, at most 16 MiB.
    func single(_ pending: [UInt8], ended: Bool, source: inout FileDescriptorSource) throws
        -> RecordJSONParser.Parsed
    {
        var all = pending
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !ended {
            let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { break }
            all += buffer[..<count]
            guard all.count <= 16 << 20 else {
                throw CofferError(.invalidArgument, "the records are one object larger than 16 MiB")
            }
        }
        return try all.withUnsafeBufferPointer { bytes in
            guard String(validating: bytes, as: UTF8.self) != nil else {
                throw CofferError(.malformed, "the records are not UTF-8 JSON")
            }
            return try RecordJSONParser.object(bytes)
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
}
