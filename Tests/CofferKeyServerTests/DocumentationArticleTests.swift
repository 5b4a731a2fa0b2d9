#if Server
import Coffer
import CofferKeyClient
import CofferKeyServer
import CofferKeyServerCore
import CofferKeychain
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import ServiceLifecycle
import Testing
import UnixSignals

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The code of the key client's and the key server's DocC articles, run
/// as written against a live server: scripts/check-article-code fails when
/// an article's block is not found here line for line.
@Suite struct DocumentationArticleTests {
    /// The app's sign-in, as the article assumes one.
    struct Session: Sendable {
        let token: String
        func currentToken() async throws -> String { token }
    }

    @Test func keysAfterSignInInAnApp() async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, dpop: DPoPPolicy(required: true))
        let session = Session(token: try issuer.token("dana"))
        let keychain = InMemoryKeychain()
        let userID = "dana"
        let ringPath = issuer.folder + "/notes.keyring"
        try await server.run { test in
            let serverURL = URL(string: "http://127.0.0.1:\(test.port!)")!
            // The app's first launch made its key ring under the server's first key.
            let first = try KeyServerClient(
                server: serverURL, account: userID, token: { try issuer.token("dana") },
                dpop: try DPoPKey.inKeychain(keychain))
            _ = try await KeyRingStore(path: ringPath, secret: try await first.unlockSecret(purpose: "notes")).create()

            // Make a client
            let dpop = try DPoPKey.inKeychain(keychain)  // made on first use, never leaves the device
            let client = try KeyServerClient(
                server: serverURL, account: userID,
                token: { try await session.currentToken() },  // your sign-in's token, refreshed as it does
                cache: keychain, policy: KeyCachePolicy(timeToLive: 3600, maxUses: 500),
                dpop: dpop)

            // Unlock with the user's key
            let opened = try await client.unlock(purpose: "notes") { secret in
                let ring = KeyRingStore(path: ringPath, secret: secret)
                _ = try ring.read()
                return ring
            } moving: { ring, older, current in
                try ring.modify { file in _ = try file.changeSecret(to: current) }
            }
            let notesRing = opened.value
            #expect(opened.version == 1 && opened.current == 1)
            #expect(try await notesRing.read().keyRing.keys.count == 1)

            // When the server says no
            do {
                _ = try await client.currentKey(purpose: "notes")
            } catch let error as KeyClientError where error.code == KeyClientError.Code("token-expired") {
                // Sign the user in again, then retry.
            } catch let error as KeyClientError where error.code == .unreachable {
                // Offline and nothing cached within the policy: say so, keep the data locked.
            }

            // Sign out
            try client.forgetCachedKeys()
        }
        // The server gone and the cache forgotten, the key is out of reach.
        let offline = try KeyServerClient(
            server: URL(string: "http://127.0.0.1:1")!, account: userID, token: { "-" }, cache: keychain,
            dpop: try DPoPKey.inKeychain(keychain))
        await #expect(throws: KeyClientError.self) { _ = try await offline.currentKey(purpose: "notes") }
    }

    @Test func embeddingTheKeyServer() async throws {
        let issuer = try Issuer()
        let databasePath = issuer.folder + "/keys.sqlite"
        let kekRing = KeyRing()
        let issuerURL = Issuer.name
        let jwksPath = issuer.folder + "/jwks.json"

        // The parts
        let keys = try ServerKeyStore(path: databasePath, kek: kekRing)
        let verifier = try await SignInVerifier(
            policy: TokenPolicy(issuer: issuerURL, audience: "notes-app"),
            jwks: { try Data(contentsOf: URL(fileURLWithPath: jwksPath)) })
        var dpop = DPoPPolicy()
        dpop.required = true  // every key request carries a proof by the device's key
        let server = try KeyServer(
            store: keys, verifier: verifier, realm: "notes",
            limits: RateLimits(subject: try RateLimit(requests: 60, seconds: 60)), dpop: dpop)

        // The application
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let app = try buildApplication(
            server,
            KeyServerConfiguration(
                host: "127.0.0.1", port: 0, logger: Logger(label: "keys"),
                onListening: { port in listening.yield(port) }))
        let running = Task { try await app.runService() }
        let port = await ports.first { _ in true }  // port 0: the system chose one

        let health = URL(string: "http://127.0.0.1:\(port!)/v1/health")!
        let (_, response) = try await URLSession(configuration: .ephemeral).data(from: health)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        running.cancel()
        _ = await running.result

        // Under your own service group
        let group = ServiceGroup(
            configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm], logger: Logger(label: "app")))
        _ = group
    }
}
#endif
