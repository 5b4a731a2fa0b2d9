import Foundation

/// Why a key could not be had. `code` is the server's problem code
/// (docs/openapi.yaml: `token-expired`, `key-shredded`, …) when the server
/// answered, or one of the client's own below.
public struct KeyClientError: Error, Sendable, CustomStringConvertible, Equatable {
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        /// A refusal of the caller's input, made before anything is sent.
        public static func invalidArgument(_ reason: String) -> KeyClientError {
            KeyClientError(.invalidArgument, reason)
        }

        public var description: String { name }

        /// The server could not be reached, and no usable cached key was left.
        public static let unreachable = Code("unreachable")
        /// The server answered with something that is not its API.
        public static let malformedResponse = Code("malformed-response")
        /// A purpose, device or version the server would refuse anyway.
        public static let invalidArgument = Code("invalid-argument")
        /// The key cache in the keychain could not be read or written.
        public static let cacheFailed = Code("cache-failed")
    }

    public let code: Code
    /// The HTTP status, when the server answered.
    public let status: Int?
    let reason: String

    init(_ code: Code, status: Int? = nil, _ reason: String) {
        self.code = code
        self.status = status
        self.reason = reason
    }

    /// A refusal of the caller's input, made before anything is sent.
    public static func invalidArgument(_ reason: String) -> KeyClientError { KeyClientError(.invalidArgument, reason) }

    public var description: String { "\(code)\(status.map { " (HTTP \($0))" } ?? ""): \(reason)" }

    public static func == (lhs: KeyClientError, rhs: KeyClientError) -> Bool {
        lhs.code == rhs.code && lhs.status == rhs.status
    }
}
