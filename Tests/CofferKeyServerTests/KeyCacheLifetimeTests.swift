#if Server
import Coffer
import CofferKeyClient
import CofferKeyServer
import CofferKeyServerCore
import CofferKeychain
import Crypto
import Foundation
import HummingbirdTesting
import Testing

/// How long a client's cached key can outlive a shred (security review 3,
/// G14): no longer than the server's `cacheSeconds` says, and not at all
/// once the server has said the keys are shredded or about to be.
@Suite struct KeyCacheLifetimeTests {
    static func items(_ keychain: InMemoryKeychain, account: String) throws -> [String] {
        do {
            return try keychain.copyMatching(.password()).compactMap(\.account).filter { $0.hasPrefix(account + "|") }
                .sorted()
        } catch let error as KeychainError where error.code == .itemNotFound {
            return []
        }
    }

    @Test func theServersCacheSecondsBoundTheClientsCache() async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, clientCacheSeconds: 60)
        let keychain = InMemoryKeychain()
        let clock = Locked<Int64>(0)
        try await server.run { client in
            let app = try KeyClientTests.client(
                client.port, token: try issuer.token("alice"), cache: keychain,
                policy: KeyCachePolicy(timeToLive: 600, maxUses: 100), clock: clock, over: .urlSession)
            #expect(!(try await app.currentKey(purpose: "notes").fromCache))
            #expect(try await app.currentKey(purpose: "notes").fromCache)
            clock.withLock { $0 = 59 }
            #expect(try await app.currentKey(purpose: "notes").fromCache)
            // Past the server's 60 s, within the client's own 600 s: asked again.
            clock.withLock { $0 = 60 }
            #expect(!(try await app.currentKey(purpose: "notes").fromCache))

            // A cache item of the earlier 60-byte form (no server seconds) is
            // still read, under the client's policy alone.
            let earlier = try await app.currentKey(purpose: "mail")
            var bytes = Array("CKC1".utf8)
            withUnsafeBytes(of: UInt32(1).bigEndian) { bytes += $0 }
            withUnsafeBytes(of: Int64(Date().timeIntervalSince1970).bigEndian) { bytes += $0 }
            withUnsafeBytes(of: UInt32(1).bigEndian) { bytes += $0 }
            bytes += Hex.decode(earlier.keyID)!
            earlier.key.withUnsafeBytes { bytes += $0 }
            let service = "coffer key server http://127.0.0.1:\(client.port!)"
            try await keychain.update(
                .password(service: service, account: "alice|mail||current"),
                with: KeychainChanges(data: SecretBytes(bytes)))
            clock.withLock { $0 = 300 }  // past the server's 60 s, which this item does not carry
            let read = try await app.currentKey(purpose: "mail")
            #expect(read.fromCache && read.key == earlier.key && read.keyID == earlier.keyID)
        }

        // A server that lets no key be kept: nothing is cached.
        let other = try Issuer()
        let strict = try await TestServer(issuer: other, clientCacheSeconds: 0)
        let fresh = InMemoryKeychain()
        try await strict.run { client in
            let app = try KeyClientTests.client(
                client.port, token: try other.token("alice"), cache: fresh, over: .urlSession)
            for _ in 0..<2 { #expect(!(try await app.currentKey(purpose: "notes").fromCache)) }
            #expect(try Self.items(fresh, account: "alice").isEmpty)
        }
    }

    @Test func aShredMakesTheClientForgetTheAccountsCachedKeys() async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, clientCacheSeconds: 300)
        let keychain = InMemoryKeychain()
        let clock = Locked<Int64>(0)
        try await server.run { client in
            let alice = try KeyClientTests.client(
                client.port, token: try issuer.token("alice"), cache: keychain, clock: clock, over: .urlSession)
            let bob = try KeyClientTests.client(
                client.port, account: "bob", token: try issuer.token("bob"), cache: keychain, clock: clock,
                over: .urlSession)
            _ = try await alice.currentKey(purpose: "notes")
            _ = try await alice.key(purpose: "notes", version: 1)
            _ = try await alice.currentKey(purpose: "mail")
            _ = try await bob.currentKey(purpose: "notes")
            #expect(try Self.items(keychain, account: "alice").count == 3)

            _ = try await server.store.shred(realm: "default", subject: "alice", after: 3600)
            // Within the server's 300 s the cache still answers: the bound the docs state.
            #expect(try await alice.currentKey(purpose: "notes").fromCache)
            clock.withLock { $0 = 300 }
            try await expectClientError(KeyClientError.Code("shred-pending"), status: 409) {
                try await alice.currentKey(purpose: "notes")
            }
            // Every key of Alice's is gone from the cache, so none is used
            // again, even within its time and offline; Bob's stays.
            #expect(try Self.items(keychain, account: "alice").isEmpty)
            #expect(try Self.items(keychain, account: "bob") == ["bob|notes||current"])
            clock.withLock { $0 = 0 }
            try await expectClientError(KeyClientError.Code("shred-pending"), status: 409) {
                try await alice.currentKey(purpose: "mail")
            }
        }
    }
}
#endif

#if Server
extension KeyCacheLifetimeTests {
    /// The cache's items are kept with the policy's accessibility (after
    /// the first unlock, this device only, unless told) and in its access
    /// group, where the next fetch finds them.
    @Test func cachedKeysCarryThePolicysAccessibilityAndAccessGroup() async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, clientCacheSeconds: 600)
        try await server.run { client in
            for (policy, accessibility, group) in [
                (KeyCachePolicy(), Accessibility.afterFirstUnlockThisDeviceOnly, nil),
                (
                    KeyCachePolicy(accessibility: .whenUnlocked, accessGroup: "TEAM.example.shared"),
                    Accessibility.whenUnlocked, "TEAM.example.shared"
                ),
            ] as [(KeyCachePolicy, Accessibility, String?)] {
                let keychain = InMemoryKeychain()
                let app = try KeyClientTests.client(
                    client.port, token: try issuer.token("alice"), cache: keychain, policy: policy, over: .urlSession)
                #expect(!(try await app.currentKey(purpose: "notes").fromCache))
                #expect(try await app.currentKey(purpose: "notes").fromCache)
                let items = try await keychain.copyMatching(.password())
                #expect(items.count == 1)
                #expect(items.first?.accessibility == accessibility)
                #expect(items.first?.accessGroup == group)
            }
        }
    }
}
#endif
