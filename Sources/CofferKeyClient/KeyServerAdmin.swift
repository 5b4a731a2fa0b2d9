import Foundation

/// An operator's calls to a key server (`/v1/admin/…`), with an operator
/// token made by `coffer-server operator add`. None of them returns a key.
public struct KeyServerAdmin: Sendable {
    let requests: KeyServerCall
    let token: String

    /// An `http://` server off loopback is `invalidArgument` here, before
    /// any connection: the operator token never crosses a network in the
    /// clear.
    ///
    /// - Parameters:
    ///   - server: the key server's base URL (`https://…`; `http://` only for loopback).
    ///   - operatorToken: `cofop_…`, with the scopes the calls need.
    ///   - transport: how requests reach the server.
    ///   - timeout: how long a call may take.
    public init(
        server: URL, operatorToken: String, transport: any KeyServerTransport = URLSessionTransport(),
        timeout: Duration = .seconds(15)
    ) throws {
        try KeyServerCall.checkTransport(server)
        requests = KeyServerCall(server: server, transport: transport, timeout: timeout)
        token = operatorToken
    }

    /// A key's version and id after a rotation.
    public struct Rotated: Sendable, Equatable {
        public let version: Int
        public let keyID: String
    }

    /// Adds a version to `subject`'s key for `purpose` and makes it current.
    /// A subject the server holds no key for is refused
    /// (`subject-unknown`, 404) unless `create`.
    public func rotate(subject: String, purpose: String, device: String? = nil, create: Bool = false) async throws
        -> Rotated
    {
        let answer = try await requests.send(
            "/v1/admin/keys/rotate", method: "POST", token: token,
            body: KeyServerBody.Rotate(subject: subject, purpose: purpose, device: device, create: create ? true : nil),
            answer: KeyServerBody.KeyInfo.self)
        return Rotated(version: answer.version, keyID: answer.keyId)
    }

    /// Stops releasing versions below `minimumVersion`.
    public func retire(subject: String, purpose: String, device: String? = nil, minimumVersion: Int) async throws {
        _ = try await requests.send(
            "/v1/admin/keys/retire", method: "POST", token: token,
            body: KeyServerBody.Retire(
                subject: subject, purpose: purpose, device: device, minimumVersion: minimumVersion),
            answer: KeyServerBody.Empty.self)
    }

    /// Schedules the destruction of every key of `subject` after
    /// `undoWindow` seconds; returns when (ISO 8601). A subject the server
    /// holds no key for is refused (`subject-unknown`, 404) unless
    /// `create`: a shred is permanent, and a typo's would wait for ever.
    public func shred(subject: String, undoWindow: Int64, create: Bool = false) async throws -> String {
        try await requests.send(
            "/v1/admin/subjects/shred", method: "POST", token: token,
            body: KeyServerBody.Shred(subject: subject, undoWindowSeconds: undoWindow, create: create ? true : nil),
            answer: KeyServerBody.Shredding.self
        ).shredAt
    }

    /// Cancels a pending shred.
    public func undoShred(subject: String) async throws {
        _ = try await requests.send(
            "/v1/admin/subjects/undo-shred", method: "POST", token: token,
            body: KeyServerBody.UndoShred(subject: subject),
            answer: KeyServerBody.Empty.self)
    }
}

extension KeyServerClient {
    /// A sign-in token for `subject` from a development server
    /// (`coffer-server serve --dev`, which signs in anyone as anyone: for
    /// tours and tests, never for production).
    public static func developmentToken(
        server: URL, subject: String, transport: any KeyServerTransport = URLSessionTransport()
    ) async throws -> String {
        try await KeyServerCall(server: server, transport: transport, timeout: .seconds(15)).send(
            "/v1/dev/token", method: "POST", token: "-", body: KeyServerBody.DevTokenRequest(subject: subject),
            answer: KeyServerBody.DevToken.self
        ).token
    }
}

extension KeyServerAdmin: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The server it calls; never the operator token.
    public var description: String { "KeyServerAdmin(\(requests.server.absoluteString), operator token redacted)" }
    public var debugDescription: String { description }
    /// What `dump` and a debugger show: the server, not the token.
    public var customMirror: Mirror { Mirror(self, children: ["server": requests.server], displayStyle: .struct) }
}
