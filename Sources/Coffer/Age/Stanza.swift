import Foundation

/// One recipient stanza of an age header: `-> type arg…` and a body.
///
/// Recipient implementations produce stanzas; identity implementations
/// read them. The type is the first argument on the stanza line.
public struct Stanza: Sendable, Hashable {
    public var type: String
    public var arguments: [String]
    public var body: [UInt8]

    /// Throws `invalidArgument` if the type or an argument is empty or holds
    /// a character outside VCHAR (0x21…0x7E), which the format cannot carry.
    public init(type: String, arguments: [String], body: [UInt8]) throws {
        for argument in [type] + arguments where !Stanza.isValidArgument(Array(argument.utf8)) {
            throw CofferError(
                .invalidArgument, "a stanza argument must be 1 or more printable ASCII characters without spaces")
        }
        self.type = type
        self.arguments = arguments
        self.body = body
    }

    init(validated type: String, arguments: [String], body: [UInt8]) {
        self.type = type
        self.arguments = arguments
        self.body = body
    }

    static func isValidArgument(_ bytes: [UInt8]) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy { $0 >= 0x21 && $0 <= 0x7E }
    }

    static let columns = 64

    /// The stanza as it appears in a header: the argument line, the body in
    /// 64-column lines of unpadded base64, and a final line shorter than 64
    /// columns (empty when the body fills its last line).
    var encoded: [UInt8] {
        var output = Array("-> ".utf8)
        output += Array(([type] + arguments).joined(separator: " ").utf8)
        output.append(0x0A)
        let text = Base64.encode(body, padded: false)
        var index = 0
        while text.count - index >= Stanza.columns {
            output += text[index..<(index + Stanza.columns)]
            output.append(0x0A)
            index += Stanza.columns
        }
        output += text[index...]
        output.append(0x0A)
        return output
    }
}

/// The checks every identity makes on a stanza of its own type before any
/// cryptography, each failing as a malformed header that names the rule.
extension Stanza {
    func requireArgumentCount(_ count: Int) throws {
        guard arguments.count == count else {
            throw CofferError(
                .malformedHeader, "the \(type) stanza must have exactly \(count) argument\(count == 1 ? "" : "s")")
        }
    }

    /// Argument `index`, which must be canonical base64 of `byteCount` bytes.
    func decodedArgument(_ index: Int, byteCount: Int, name: String) throws -> [UInt8] {
        guard let bytes = Base64.decode(arguments[index]), bytes.count == byteCount else {
            throw CofferError(
                .malformedHeader, "the \(type) stanza's \(name) must be \(byteCount) bytes of canonical base64")
        }
        return Array(bytes)
    }

    /// The two arguments of a tagged stanza (a 4-byte tag of the recipient,
    /// then the sender's share of `shareSize` bytes), its body checked to
    /// hold one wrapped file key.
    func taggedShare(shareSize: Int) throws -> (tag: [UInt8], share: [UInt8]) {
        try requireArgumentCount(2)
        let tag = try decodedArgument(0, byteCount: 4, name: "tag")
        let share = try decodedArgument(1, byteCount: shareSize, name: "share")
        try requireBodyCount(FileKey.byteCount + 16)
        return (tag, share)
    }

    /// Checked before decrypting, against partitioning oracles.
    func requireBodyCount(_ byteCount: Int) throws {
        guard body.count == byteCount else {
            throw CofferError(.malformedHeader, "the \(type) stanza's body must be \(byteCount) bytes")
        }
    }
}
