import Foundation

/// age's ASCII armor: strict PEM (RFC 7468 §3, Figure 3) with the label
/// "AGE ENCRYPTED FILE", padded canonical base64 in 64-column lines. Only
/// whitespace before and after the block is tolerated, and CRLF or LF line
/// ends; everything else is rejected, because a lax parser makes an armored
/// file malleable (c2sp.org/age, "ASCII armor").
enum Armor {
    static let begin = Array("-----BEGIN AGE ENCRYPTED FILE-----".utf8)
    static let end = Array("-----END AGE ENCRYPTED FILE-----".utf8)
    static let columns = 64
    static let bytesPerLine = columns / 4 * 3

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// Whether the input is to be read as armor: anything that does not
    /// open with (a prefix of) the binary version line is, so that damaged
    /// armor (bad label, garbage before it) is reported as an armor failure
    /// and a truncated binary file as a header failure.
    static func detect<S: ByteSource>(_ reader: inout LineReader<S>) throws -> Bool {
        let start = try reader.peek(Header.versionPrefix.count)
        return !Header.versionPrefix.starts(with: start)
    }

    static func fail(_ reason: String) -> CofferError { CofferError(.malformedArmor, reason) }
}

/// Decodes an armored age file as a `ByteSource` of the binary file.
/// Lines are decoded straight into the caller's buffer.
struct ArmorReader<Source: ByteSource>: ByteSource {
    private var reader: LineReader<Source>
    /// Decoded bytes the caller's buffer had no room for (at most a line).
    private var pending = [UInt8](repeating: 0, count: Armor.bytesPerLine)
    private var pendingStart = 0
    private var pendingEnd = 0
    private var started = false
    private var finished = false
    /// Set after a short or padded line: only the END line may follow.
    private var mustEnd = false
    private var lineNumber = 0

    init(_ reader: LineReader<Source>) { self.reader = reader }

    /// A line without its LF and an optional CR before it.
    private mutating func nextLine() throws -> (line: ArraySlice<UInt8>, terminated: Bool)? {
        let next: (line: ArraySlice<UInt8>, terminated: Bool)?
        do { next = try reader.readLine(limit: Armor.columns + 2) } catch {
            throw Armor.fail("line \(lineNumber + 1) of the armor is longer than 64 columns")
        }
        guard let next else { return nil }
        var line = next.line
        lineNumber += 1
        if next.terminated, line.last == 0x0D { line = line.dropLast() }
        return (line, next.terminated)
    }

    private mutating func start() throws {
        while let byte = try reader.peek(1).first, Armor.isWhitespace(byte) {
            var one: UInt8 = 0
            _ = try withUnsafeMutableBytes(of: &one) { try reader.read(into: $0) }
        }
        guard let (line, terminated) = try nextLine(), line.elementsEqual(Armor.begin), terminated else {
            throw Armor.fail(
                "this is not an age file: it starts neither with \"age-encryption.org/\" nor with an armor line \"-----BEGIN AGE ENCRYPTED FILE-----\""
            )
        }
        started = true
    }

    /// Decodes the next data line into `output` (room for 48 bytes) and
    /// returns the count, or returns 0 after the END line.
    private mutating func decodeLine(into output: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let (line, terminated) = try nextLine() else {
            throw Armor.fail("the armor has no \"-----END AGE ENCRYPTED FILE-----\" line")
        }
        if line.elementsEqual(Armor.end) {
            // After the END line, only whitespace may follow.
            var rest = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = try rest.withUnsafeMutableBytes { try reader.read(into: $0) }
                if count == 0 { break }
                guard terminated, rest[..<count].allSatisfy(Armor.isWhitespace) else {
                    throw Armor.fail("there is data after the armor's END line")
                }
            }
            finished = true
            return 0
        }
        guard terminated else { throw Armor.fail("the armor ends without an END line") }
        guard !mustEnd else {
            throw Armor.fail(
                "line \(lineNumber - 1) of the armor is shorter than 64 columns or padded but is not the last")
        }
        guard !line.isEmpty, line.count <= Armor.columns else {
            throw Armor.fail("line \(lineNumber) of the armor is empty or longer than 64 columns")
        }
        guard let count = Base64.decodePaddedLine(line, into: output) else {
            throw Armor.fail("line \(lineNumber) of the armor is not canonical padded base64")
        }
        if line.count < Armor.columns || line.last == UInt8(ascii: "=") { mustEnd = true }
        return count
    }

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if !started { try start() }
        var written = 0
        while written < buffer.count {
            if pendingStart < pendingEnd {
                let count = min(buffer.count - written, pendingEnd - pendingStart)
                pending.withUnsafeBytes {
                    (buffer.baseAddress! + written).copyMemory(from: $0.baseAddress! + pendingStart, byteCount: count)
                }
                pendingStart += count
                written += count
                continue
            }
            if finished { break }
            if buffer.count - written >= Armor.bytesPerLine {
                written += try decodeLine(into: UnsafeMutableRawBufferPointer(rebasing: buffer[written...]))
            } else {
                var scratch = pending
                pendingEnd = try scratch.withUnsafeMutableBytes { try decodeLine(into: $0) }
                pending = scratch
                pendingStart = 0
            }
        }
        return written
    }
}

/// Encodes a binary age file into armor. Call `finish()` at the end.
struct ArmorWriter<Sink: ByteSink>: ByteSink {
    var sink: Sink
    private var partial: [UInt8] = []
    private var wroteBegin = false

    init(_ sink: Sink) { self.sink = sink }

    private mutating func writeBegin() throws {
        if !wroteBegin {
            try sink.write(Armor.begin + [0x0A])
            wroteBegin = true
        }
    }

    mutating func write(_ bytes: UnsafeRawBufferPointer) throws {
        try writeBegin()
        partial.append(contentsOf: bytes)
        let whole = partial.count / Armor.bytesPerLine * Armor.bytesPerLine
        guard whole > 0 else { return }
        var output: [UInt8] = []
        output.reserveCapacity(whole / Armor.bytesPerLine * (Armor.columns + 1))
        var index = 0
        while index < whole {
            output += Base64.encode(partial[index..<(index + Armor.bytesPerLine)], padded: true)
            output.append(0x0A)
            index += Armor.bytesPerLine
        }
        partial.removeFirst(whole)
        try sink.write(output)
    }

    mutating func finish() throws {
        try writeBegin()
        var output: [UInt8] = []
        if !partial.isEmpty {
            output = Base64.encode(partial, padded: true) + [0x0A]
            partial = []
        }
        try sink.write(output + Armor.end + [0x0A])
    }
}
