import Foundation

/// The context of a sealed value, built from parts: where the value
/// belongs (`"notes", noteID, "description"`). Each part is length-prefixed,
/// so two different part lists never give the same bytes — unlike joining
/// with a separator, where `notes` + `4/description` and `notes/4` +
/// `description` collide once a part may contain the separator.
///
/// ```swift
/// let context = SealingContext("presents", present.id, "description")
/// let sealed = try ring.seal(description, context: context)
/// let opened = try ring.open(sealed, context: context)
/// ```
///
/// Encoding (docs/sealed-values.md): `"SC1"` ‖ for each part: its length
/// as 4 bytes big-endian ‖ its bytes. The bytes are bound to the value as
/// its context (authenticated, not stored).
public struct SealingContext: Sendable, Hashable, CustomStringConvertible {
    /// The encoded context, as `KeyRing.seal(_:context:)` binds it.
    public let bytes: [UInt8]
    /// How many parts it has.
    public let count: Int

    static let prefix = Array("SC1".utf8)
    /// A part is at most 1 MiB, so its length always fits the prefix.
    static let maximumPartSize = 1 << 20

    /// Parts given as text (UTF-8).
    public init(_ parts: String...) throws {
        try self.init(parts: parts.map { Array($0.utf8) })
    }

    /// Parts given as bytes.
    public init(parts: [[UInt8]]) throws {
        var bytes = Self.prefix
        for part in parts {
            guard part.count <= Self.maximumPartSize else {
                throw CofferError(.invalidArgument, "a context part is at most 1 MiB, not \(part.count) bytes")
            }
            bytes += withUnsafeBytes(of: UInt32(part.count).bigEndian, Array.init)
            bytes += part
        }
        self.bytes = bytes
        count = parts.count
    }

    /// A context already encoded (CofferStore's cell contexts, built
    /// straight into bytes by their own builder), of `count` parts.
    package init(encoded bytes: [UInt8], count: Int) {
        self.bytes = bytes
        self.count = count
    }

    /// Shows the number of parts and the encoded length; the parts may be
    /// private (a user id), so they are not shown.
    public var description: String { "SealingContext(\(count) parts, \(bytes.count) bytes)" }
}

extension KeyRing {
    /// Seals under the primary key, binding `context`.
    ///
    /// ```swift
    /// let sealed = try ring.seal(Data("dear diary".utf8), context: try SealingContext("notes", "42", "body"))
    /// ```
    public func seal(_ plaintext: some DataProtocol, context: SealingContext) throws -> Data {
        try seal(plaintext, context: context.bytes)
    }

    /// Opens a value sealed with `context`.
    ///
    /// ```swift
    /// let body = try ring.open(sealed, context: try SealingContext("notes", "42", "body"))
    /// ```
    public func open(_ sealed: some DataProtocol, context: SealingContext) throws -> Data {
        try open(sealed, context: context.bytes)
    }

    /// Re-seals a value under the primary key, keeping `context`.
    public func rewrap(_ sealed: some DataProtocol, context: SealingContext) throws -> Data {
        try rewrap(sealed, context: context.bytes)
    }
}
