import Foundation

/// Secret bytes: printed as `<redacted>`, compared in constant time.
public struct SecretBytes: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable
{
    private let storage: [UInt8]
    public init(_ bytes: some Sequence<UInt8>) { storage = Array(bytes) }
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes(body)
    }
    public var count: Int { storage.count }
    /// The bytes themselves: an explicit act.
    public func revealed() -> [UInt8] { storage }
    public var description: String { "SecretBytes(\(storage.count) bytes, <redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": storage.count]) }
    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool { ConstantTime.equal(lhs.storage, rhs.storage) }
}
