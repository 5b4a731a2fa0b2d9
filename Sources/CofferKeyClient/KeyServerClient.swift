import Coffer
import CofferKeychain
import Crypto
import Foundation

/// A key as the server released it (or as the cache kept it).
public struct ServerKey: Sendable, CustomStringConvertible {
    public let purpose: String
    public let version: Int
    /// Opaque, stable per version; names the key that sealed some data.
    public let keyID: String
    /// The 256-bit key; hidden from `description`.
    public let key: SymmetricKey
    /// True when the keychain's cache answered, not the server.
    public let fromCache: Bool
    /// How long the server lets the client keep the key (nil: it did not say).
    var cacheSeconds: Int64? = nil

    public var description: String {
        "ServerKey(\(purpose) v\(version), id \(keyID)\(fromCache ? ", cached" : ""), <redacted>)"
    }
}

/// Fetches the signed-in user's keys from a Coffer key server
/// (docs/key-server.md, docs/openapi.yaml), keeping them in a keychain for
/// `policy`'s time and uses so that the app works offline within them.
///
/// ```swift
/// let client = try KeyServerClient(
///     server: URL(string: "https://keys.example.com")!, account: user.id,
///     token: { try await session.idToken() }, cache: try FileKeychain.open(path: path, secret: deviceSecret))
/// let notes = try await client.currentKey(purpose: "notes")
/// let ring = KeyRingStore(path: "notes.ckr", secret: try await client.unlockSecret(purpose: "notes"))
/// ```
///
/// A fetch made inside the app's trace (a span of its OpenTelemetry
/// tracer, or any `ServiceContext` its instrument reads) carries that
/// context — a W3C `traceparent` — so the key server's spans join the
/// app's trace (docs/key-server-operating.md, "Traces").
public struct KeyServerClient: Sendable {
    public let server: URL
    /// Who is signed in, as the app knows them: it keeps one user's cached
    /// keys apart from another's on a shared device.
    public let account: String
    let token: @Sendable () async throws -> String
    let cache: KeyCache?
    let transport: any KeyServerTransport
    let now: @Sendable () -> Int64
    /// How long a fetch may take, connecting included. A server that
    /// refuses the connection is reported at once, not at the timeout.
    public let timeout: Duration
    /// The device's proof-of-possession key, when requests are device-bound.
    public let dpop: DPoPKey?
    let dpopNonce = Locked<String?>(nil)
    public static let maxResponseBytes = 64 * 1024

    /// ```swift
    /// let client = try KeyServerClient(
    ///     server: URL(string: "https://keys.example.com")!, account: userID,
    ///     token: { try await session.currentToken() }, cache: keychain, dpop: try DPoPKey.inKeychain(keychain))
    /// ```
    ///
    /// - Parameters:
    ///   - server: the key server's base URL (`https://…`; `http://` only for loopback).
    ///   - account: the signed-in user, as the app names them.
    ///   - token: the user's current sign-in token (a JWT), asked for on each fetch.
    ///   - cache: where fetched keys are kept; nil keeps none.
    ///   - policy: how long, and how many times, a cached key may be used.
    ///   - transport: how requests reach the server (``URLSessionTransport``
    ///     with `URLSession.shared` by default).
    ///   - timeout: how long a fetch may take, connecting included.
    ///   - now: the clock, seconds since 1970.
    ///   - dpop: the device's DPoP key: every request then carries a proof
    ///     by it (RFC 9449), and the server answers with this device's keys.
    public init(
        server: URL, account: String, token: @escaping @Sendable () async throws -> String,
        cache: (any Keychain)? = nil, policy: KeyCachePolicy = KeyCachePolicy(),
        transport: any KeyServerTransport = URLSessionTransport(), timeout: Duration = .seconds(15),
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        dpop: DPoPKey? = nil
    ) throws {
        try KeyServerCall.checkTransport(server)
        self.server = server
        self.account = account
        self.token = token
        self.cache = cache.map {
            KeyCache(keychain: $0, service: "coffer key server \(server.absoluteString)", policy: policy)
        }
        self.transport = transport
        self.timeout = timeout
        self.now = now
        self.dpop = dpop
    }

    /// The current key for `purpose` (and `device`): from the cache while
    /// the policy allows, else from the server, which makes it on first use.
    ///
    /// ```swift
    /// let key = try await client.currentKey(purpose: "notes")
    /// let ring = KeyRingStore(path: ringPath, secret: .key(key.key))
    /// ```
    public func currentKey(purpose: String, device: String? = nil) async throws -> ServerKey {
        let account = try cacheAccount(purpose, device ?? dpop.map { "jkt:" + $0.thumbprint }, "current")
        if let entry = try cached(account) { return ServerKey(entry, purpose: purpose) }
        let key = try await forgettingOnShred {
            try await fetch(
                path: "/v1/keys/\(purpose)", method: "POST", body: device.map { KeyServerBody.KeyRequest(device: $0) },
                purpose: purpose)
        }
        try keep(key, account)
        return key
    }

    /// Version `version` of the key for `purpose`, to open data sealed under it.
    public func key(purpose: String, version: Int, device: String? = nil) async throws -> ServerKey {
        guard version >= 1 else { throw KeyClientError(.invalidArgument, "a version is a whole number from 1") }
        let account = try cacheAccount(purpose, device ?? dpop.map { "jkt:" + $0.thumbprint }, "v\(version)")
        if let entry = try cached(account) { return ServerKey(entry, purpose: purpose) }
        var path = "/v1/keys/\(purpose)/versions/\(version)"
        if let device { path += "?device=\(device)" }
        let key = try await forgettingOnShred {
            try await fetch(path: path, method: "GET", body: nil, purpose: purpose)
        }
        guard key.version == version else {
            throw KeyClientError(.malformedResponse, "the server answered version \(key.version) for \(version)")
        }
        try keep(key, account)
        return key
    }

    /// "The server's key for `purpose`" as the secret that unlocks a key
    /// ring, a file keychain or a `CofferStore`.
    public func unlockSecret(purpose: String, device: String? = nil) async throws -> UnlockSecret {
        .key(try await currentKey(purpose: purpose, device: device).key)
    }

    /// Forgets every cached key of this account (on sign-out).
    ///
    /// ```swift
    /// try client.forgetCachedKeys()  // at sign-out
    /// ```
    public func forgetCachedKeys() throws {
        do {
            try cache?.forget(accountPrefix: account + "|")
        } catch {
            throw KeyClientError(.cacheFailed, "the key cache could not be cleared (\(type(of: error)))")
        }
    }

    // MARK: cache

    func cacheAccount(_ purpose: String, _ device: String?, _ which: String) throws -> String {
        guard Self.isToken(purpose, 1...64, "abcdefghijklmnopqrstuvwxyz0123456789._-"),
            Self.isToken(device ?? "", 0...128, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-")
        else {
            throw KeyClientError(
                .invalidArgument, "a purpose is 1–64 of a-z 0-9 . _ -; a device at most 128 of A-Z a-z 0-9 . _ : -")
        }
        return "\(account)|\(purpose)|\(device ?? "")|\(which)"
    }

    static func isToken(_ text: String, _ range: ClosedRange<Int>, _ allowed: String) -> Bool {
        range.contains(text.count) && text.allSatisfy(allowed.contains)
    }

    func cached(_ account: String) throws -> KeyCache.Entry? {
        do {
            return try cache?.take(account, now: now())
        } catch {
            throw KeyClientError(.cacheFailed, "the key cache could not be read (\(type(of: error)))")
        }
    }

    /// Runs `fetch`; when the server says this user's keys are shredded or
    /// about to be, forgets every key of the account the cache holds, so
    /// that none is used again, even offline.
    func forgettingOnShred(_ fetch: () async throws -> ServerKey) async throws -> ServerKey {
        do {
            return try await fetch()
        } catch let error as KeyClientError where ["key-shredded", "shred-pending"].contains(error.code.name) {
            try forgetCachedKeys()
            throw error
        }
    }

    func keep(_ key: ServerKey, _ account: String) throws {
        do {
            guard key.cacheSeconds != 0 else {
                try cache?.remove(account)
                return
            }
            try cache?.put(
                KeyCache.Entry(
                    version: key.version, fetched: now(), uses: 1, lifetime: key.cacheSeconds, keyID: key.keyID,
                    key: key.key), account)
        } catch {
            throw KeyClientError(.cacheFailed, "the key cache could not be written (\(type(of: error)))")
        }
    }
}

extension ServerKey {
    init(_ entry: KeyCache.Entry, purpose: String) {
        self.init(purpose: purpose, version: entry.version, keyID: entry.keyID, key: entry.key, fromCache: true)
    }
}
