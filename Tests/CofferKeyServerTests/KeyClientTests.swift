#if Server
import AsyncHTTPClient
import Coffer
import CofferKeyClient
import CofferKeyClientNIO
import CofferKeyServer
import CofferKeyServerCore
import CofferKeychain
import Crypto
import Foundation
import HummingbirdTesting
import NIOCore
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// CofferKeyClient against a live server: keys, the keychain cache's time
/// and use limits, offline use within them, the server's problems as
/// errors, and a key as the secret that unlocks a key ring.
@Suite struct KeyClientTests {
    /// The app's transport (URLSession, FoundationNetworking here) and the
    /// server side's (AsyncHTTPClient): every test runs over both.
    enum Transport: String, CaseIterable, Sendable {
        case urlSession, asyncHTTPClient

        var transport: any KeyServerTransport {
            switch self {
            case .urlSession: URLSessionTransport(session: KeyClientTests.session)
            case .asyncHTTPClient: AsyncHTTPClientTransport(KeyClientTests.http)
            }
        }
    }

    static let session = URLSession(configuration: .ephemeral)

    static func client(
        _ port: Int?, account: String = "alice", token: String, cache: (any Keychain)?,
        policy: KeyCachePolicy = KeyCachePolicy(), clock: Locked<Int64> = Locked(0), timeout: Duration = .seconds(30),
        over transport: Transport
    ) throws -> KeyServerClient {
        try KeyServerClient(
            server: URL(string: "http://127.0.0.1:\(port ?? 1)")!, account: account, token: { token }, cache: cache,
            policy: policy, transport: transport.transport, timeout: timeout,
            now: { Int64(Date().timeIntervalSince1970) + clock.withLock { $0 } }
        )
    }

    /// One HTTP client for the suite whose idle connections are closed
    /// after each request, so that a test server stops at once.
    static let http: HTTPClient = {
        var configuration = AsyncHTTPClientTransport.configuration()
        configuration.connectionPool.idleTimeout = .milliseconds(1)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    @Test(arguments: Transport.allCases) func keysComeFromTheServerThenFromTheCacheWithinItsLimits(
        _ transport: Transport
    ) async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer)
        let token = try issuer.token("alice")
        let keychain = InMemoryKeychain()
        let clock = Locked<Int64>(0)
        let portBox = Locked<Int?>(nil)
        try await server.run { client in
            portBox.withLock { $0 = client.port }
            let app = try Self.client(
                client.port, token: token, cache: keychain, policy: KeyCachePolicy(timeToLive: 600, maxUses: 3),
                clock: clock, over: transport)
            let first = try await app.currentKey(purpose: "notes")
            #expect(!first.fromCache)
            #expect(first.version == 1)
            #expect(!"\(first)".contains(first.key.withUnsafeBytes { Data($0).base64EncodedString() }))
            // Uses 2 and 3 from the cache, then the server again.
            for _ in 0..<2 {
                let again = try await app.currentKey(purpose: "notes")
                #expect(again.fromCache)
                #expect(again.key == first.key && again.keyID == first.keyID)
            }
            let refreshed = try await app.currentKey(purpose: "notes")
            #expect(!refreshed.fromCache)
            #expect(refreshed.key == first.key)
            // Past the time to live: the server again.
            #expect(try await app.currentKey(purpose: "notes").fromCache)
            clock.withLock { $0 = 601 }
            #expect(!(try await app.currentKey(purpose: "notes").fromCache))
            // Another account on the same keychain never sees Alice's cache.
            let bob = try Self.client(
                client.port, account: "bob", token: try issuer.token("bob"), cache: keychain, over: transport)
            let bobs = try await bob.currentKey(purpose: "notes")
            #expect(!bobs.fromCache)
            #expect(bobs.key != first.key)
            // A version, and a device.
            #expect(try await app.key(purpose: "notes", version: 1).key == first.key)
            #expect(try await app.currentKey(purpose: "notes", device: "phone-1").key != first.key)
        }
        // Offline: the server is gone; the cache serves within its limits, then nothing.
        let offline = try Self.client(
            portBox.withLock { $0 }, token: token, cache: keychain, policy: KeyCachePolicy(timeToLive: 600, maxUses: 3),
            clock: clock, timeout: .seconds(2), over: transport)
        #expect(try await offline.currentKey(purpose: "notes").fromCache)
        clock.withLock { $0 = 1300 }
        try await expectClientError(.unreachable) {
            try await offline.currentKey(purpose: "notes")
        }
        try offline.forgetCachedKeys()
        let left = try await keychain.copyMatching(.password())
        #expect(!left.isEmpty && left.allSatisfy { $0.account?.hasPrefix("alice|") == false })
    }

    @Test(arguments: Transport.allCases) func theServersProblemsBecomeErrorsWithTheirCodes(_ transport: Transport)
        async throws
    {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer)
        let expired = try issuer.token("alice", ["exp": Int(Date().timeIntervalSince1970) - 600])
        let valid = try issuer.token("alice")
        try await server.run { client in
            let stale = try Self.client(client.port, token: expired, cache: nil, over: transport)
            try await expectClientError(KeyClientError.Code("token-expired"), status: 401) {
                try await stale.currentKey(purpose: "notes")
            }
            let app = try Self.client(client.port, token: valid, cache: nil, over: transport)
            try await expectClientError(KeyClientError.Code("key-not-found"), status: 404) {
                try await app.key(purpose: "notes", version: 9)
            }
            try await expectClientError(.invalidArgument) {
                try await app.currentKey(purpose: "Notes!")
            }
            try await expectClientError(.invalidArgument) {
                try await app.key(purpose: "notes", version: 0)
            }
        }
        let refused = #expect(throws: KeyClientError.self) {
            try KeyServerClient(server: URL(string: "http://keys.example.com")!, account: "a", token: { "" })
        }
        #expect(refused?.code == .invalidArgument)
    }

    /// A server that is down is said at once: the connection is refused,
    /// and the client does not wait out its timeout.
    @Test(arguments: Transport.allCases) func aRefusedConnectionIsReportedAtOnce(_ transport: Transport) async throws {
        let client = try Self.client(9, token: "t", cache: nil, timeout: .seconds(15), over: transport)
        let start = ContinuousClock.now
        let error = await #expect(throws: KeyClientError.self) { try await client.currentKey(purpose: "notes") }
        let waited = ContinuousClock.now - start
        #expect(error?.code == .unreachable)
        #expect(waited < .seconds(3), "\(transport): reported after \(waited)")
        #expect("\(error.map { "\($0)" } ?? "")".contains("refused"), "\(String(describing: error))")
    }

    @Test(arguments: Transport.allCases) func theServersKeyUnlocksAKeyRing(_ transport: Transport) async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer)
        let token = try issuer.token("alice")
        let path = issuer.folder + "/notes.ckr"
        try await server.run { client in
            let app = try Self.client(client.port, token: token, cache: nil, over: transport)
            let store = KeyRingStore(
                path: path, secret: try await app.unlockSecret(purpose: "notes"), rollbackGuard: nil)
            _ = try await store.create()
            // Later, on another run of the app: the same purpose opens it; another does not.
            let again = KeyRingStore(
                path: path, secret: try await app.unlockSecret(purpose: "notes"), rollbackGuard: nil)
            _ = try await again.read()
            let wrong = KeyRingStore(
                path: path, secret: try await app.unlockSecret(purpose: "photos"), rollbackGuard: nil)
            await #expect(throws: CofferError.self) { try await wrong.read() }
        }
    }
}

/// Expects `body` to throw a `KeyClientError` with `code` (and `status`).
func expectClientError(
    _ code: KeyClientError.Code, status: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> some Any
) async throws {
    let error = await #expect(throws: KeyClientError.self, sourceLocation: sourceLocation) { try await body() }
    #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
    if let status { #expect(error?.status == status, sourceLocation: sourceLocation) }
}
#endif
