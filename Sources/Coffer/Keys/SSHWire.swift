/// The SSH binary encodings of RFC 4251 §5 that OpenSSH key files use:
/// uint32, string (uint32 length + bytes), mpint (two's complement,
/// big-endian, minimal). The reader never allocates more than its input
/// holds, so a hostile length fails cleanly.
struct SSHWireReader {
    private(set) var remaining: ArraySlice<UInt8>

    init(_ bytes: some Collection<UInt8>) { remaining = ArraySlice(bytes) }

    var isAtEnd: Bool { remaining.isEmpty }

    mutating func uint32() throws -> UInt32 {
        guard remaining.count >= 4 else { throw CofferError(.malformed, "the SSH key data is truncated") }
        let value = remaining.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        remaining = remaining.dropFirst(4)
        return value
    }

    mutating func string() throws -> ArraySlice<UInt8> {
        let length = Int(try uint32())
        guard length <= remaining.count else {
            throw CofferError(.malformed, "the SSH key data is truncated (a length runs past its end)")
        }
        let value = remaining.prefix(length)
        remaining = remaining.dropFirst(length)
        return value
    }

    mutating func text() throws -> String {
        let bytes = try string()
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CofferError(.malformed, "the SSH key data holds a name that is not UTF-8")
        }
        return text
    }

    /// A non-negative mpint, as unsigned big-endian bytes without leading zeros.
    mutating func positiveMPInt() throws -> [UInt8] {
        let bytes = try string()
        guard let first = bytes.first else { return [] }
        guard first & 0x80 == 0 else { throw CofferError(.malformed, "the SSH key data holds a negative integer") }
        return Array(bytes.drop { $0 == 0 })
    }
}

struct SSHWireWriter {
    private(set) var bytes: [UInt8] = []

    mutating func uint32(_ value: UInt32) {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    mutating func string(_ value: some Collection<UInt8>) {
        uint32(UInt32(value.count))
        bytes += value
    }

    mutating func string(_ value: String) { string(Array(value.utf8)) }

    mutating func mpint(unsigned value: some Collection<UInt8>) {
        var magnitude = Array(value.drop { $0 == 0 })
        if let first = magnitude.first, first & 0x80 != 0 { magnitude.insert(0, at: 0) }
        string(magnitude)
    }

    mutating func raw(_ value: some Collection<UInt8>) { bytes += value }
}
