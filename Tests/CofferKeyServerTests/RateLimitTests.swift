#if Server
import Coffer
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// Per-subject and per-address limits, counted in the database.
@Suite struct RateLimitTests {
    /// A day's window, so that no window ends while a test runs (but at
    /// midnight UTC).
    static let day = 86_400

    static func retryAfter(_ response: TestResponse) -> Int? {
        response.headers[.retryAfter].flatMap { Int($0) }
    }

    @Test(arguments: Backend.allCases) func aSubjectPastItsLimitGets429AndOthersDoNot(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let limits = RateLimits(subject: try RateLimit(requests: 5, seconds: Self.day))
        let server = try await TestServer(issuer: issuer, backend: backend, limits: limits)
        let (alice, bob) = (try issuer.token("alice"), try issuer.token("bob"))
        try await server.run { client in
            for number in 0..<5 {
                // Fetches and version reads both count.
                let uri = number == 4 ? "/v1/keys/notes/versions/1" : "/v1/keys/notes"
                try await client.execute(uri: uri, method: number == 4 ? .get : .post, headers: bearer(alice)) {
                    #expect($0.status == .ok)
                }
            }
            for _ in 0..<3 {
                try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(alice)) { response in
                    try expectProblem(response, .tooManyRequests, "rate-limited")
                    let after = try #require(Self.retryAfter(response))
                    #expect((1...Self.day).contains(after))
                }
            }
            try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(bob)) {
                #expect($0.status == .ok)
            }
        }
        // The refusal that found the window full counts; the next two are
        // refused from this replica's memory with no write: 5 granted and 1.
        #expect(try server.count("SELECT count FROM rate_counts WHERE bucket = 'subject:default/alice'") == 6)
        // A past window is forgotten by the sweep.
        server.skip.withLock { $0 = Int64(Self.day) }
        try await server.store.sweep()
        #expect(try server.count("SELECT count(*) FROM rate_counts") == 0)
    }

    @Test(arguments: Backend.allCases) func anAddressPastItsLimitGets429BeforeItsTokenIsChecked(_ backend: Backend)
        async throws
    {
        let issuer = try Issuer()
        let limits = RateLimits(address: try RateLimit(requests: 4, seconds: Self.day))
        let server = try await TestServer(issuer: issuer, backend: backend, limits: limits)
        try await server.run { client in
            // Two guesses at a token and two real fetches use up the window.
            for token in ["not-a-token", "still-not", try issuer.token("carol"), try issuer.token("dave")] {
                try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(token)) {
                    #expect($0.status == .ok || $0.status == .unauthorized)
                }
            }
            // Then even a good token of a new subject is refused, from this address.
            try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(try issuer.token("erin"))) {
                try expectProblem($0, .tooManyRequests, "rate-limited")
                #expect(Self.retryAfter($0) != nil)
            }
            // Liveness and readiness are never limited.
            for uri in ["/v1/health", "/v1/ready"] {
                try await client.execute(uri: uri, method: .get) { #expect($0.status == .ok) }
            }
        }
    }

    /// G7: tokens that are not tokens, or not signed by the issuer, are
    /// counted only in the replica's memory, never written; past the limit
    /// they are refused there. Accepted ones go to the shared count.
    @Test(arguments: Backend.allCases) func junkTokensNeverReachTheDatabase(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let limits = RateLimits(address: try RateLimit(requests: 6, seconds: Self.day))
        let server = try await TestServer(issuer: issuer, backend: backend, limits: limits)
        let forged = try Issuer().token("carol")  // well formed, signed by another issuer's key
        try await server.run { client in
            for token in [try issuer.token("carol"), "x.y.z", "not-a-token", forged, forged, try issuer.token("dan")] {
                try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(token)) {
                    #expect($0.status == .ok || $0.status == .unauthorized)
                }
            }
            #expect(try server.count("SELECT count(*) FROM rate_counts WHERE bucket LIKE 'address:%'") == 1)
            #expect(try server.count("SELECT count FROM rate_counts WHERE bucket LIKE 'address:%'") == 2)
            for token in ["x.y.z", try issuer.token("erin")] {
                try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(token)) {
                    try expectProblem($0, .tooManyRequests, "rate-limited")
                }
            }
        }
        #expect(try server.count("SELECT count FROM rate_counts WHERE bucket LIKE 'address:%'") == 2)
    }

    /// Eight clients hammer as one subject far past its limit while another
    /// subject fetches its keys: the other is never refused and its answers
    /// stay quick, because a refusal costs one counter update.
    @Test(arguments: Backend.allCases) func aHammeringSubjectDoesNotSlowOthers(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let limits = RateLimits(subject: try RateLimit(requests: 10, seconds: Self.day))
        let server = try await TestServer(issuer: issuer, backend: backend, limits: limits)
        let (mallory, bob) = (try issuer.token("mallory"), try issuer.token("bob"))
        try await server.run { client in
            let stop = Locked(false)
            let refused = Locked(0)
            let hammer = Task {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            while !stop.withLock({ $0 }) {
                                let status = try? await client.execute(
                                    uri: "/v1/keys/notes", method: .post, headers: bearer(mallory)
                                ) { $0.status }
                                if status == .tooManyRequests { refused.withLock { $0 += 1 } }
                            }
                        }
                    }
                }
            }
            try await Task.sleep(for: .milliseconds(200))
            var seconds: [Double] = []
            for number in 0..<10 {
                let start = Date()
                try await client.execute(uri: "/v1/keys/p\(number)", method: .post, headers: bearer(bob)) {
                    #expect($0.status == .ok)
                }
                seconds.append(Date().timeIntervalSince(start))
            }
            stop.withLock { $0 = true }
            await hammer.value
            #expect(refused.withLock { $0 } > 20, "the hammering subject was not refused")
            let median = seconds.sorted()[seconds.count / 2]
            #expect(median < 0.25, "the other subject's median answer took \(median) s")
        }
    }

    @Test func limitsAreWrittenNSlashSeconds() throws {
        #expect(try RateLimit("60/60") == RateLimit(requests: 60, seconds: 60))
        #expect(try RateLimit("60/60").description == "60/60")
        for bad in ["", "60", "60/", "/60", "0/60", "60/0", "-1/60", "60/86401", "a/b", "60/60/60", "1000001/1"] {
            #expect(throws: CofferError.self, "\(bad)") { _ = try RateLimit(bad) }
        }
    }
}
#endif
