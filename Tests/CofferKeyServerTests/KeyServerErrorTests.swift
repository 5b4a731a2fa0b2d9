#if Server
import Foundation
import HTTPTypes
import Testing

@testable import CofferKeyServer

/// The domain's errors carry no HTTP; the edge chooses status and headers.
@Suite struct KeyServerErrorTests {
    @Test func eachKindBecomesItsStatusAndHeadersAtTheEdge() {
        let cases: [(KeyServerError.Kind, Int, HTTPField.Name?, String?)] = [
            (.invalidInput, 400, nil, nil),
            (.unauthenticated, 401, .wwwAuthenticate, "Bearer error=\"invalid_token\""),
            (.proofRefused, 401, .wwwAuthenticate, "DPoP error=\"invalid_dpop_proof\", algs=\"ES256\""),
            (.forbidden, 403, nil, nil),
            (.notFound, 404, nil, nil),
            (.conflict, 409, nil, nil),
            (.gone, 410, nil, nil),
            (.rateLimited(retryAfter: 17), 429, .retryAfter, "17"),
            (.rateLimited(retryAfter: 0), 429, .retryAfter, "1"),
            (.unavailable, 503, .retryAfter, "1"),
            (.failed, 500, nil, nil),
        ]
        var statuses: Set<Int> = []
        for (kind, status, field, value) in cases {
            let problem = Problem(KeyServerError(kind, "some-code", "what happened"))
            #expect(problem.status.code == status, "\(kind)")
            #expect(problem.code == "some-code" && problem.detail == "what happened")
            if let field {
                #expect(problem.headers[field] == value, "\(kind)")
            } else {
                #expect(problem.headers.isEmpty)
            }
            statuses.insert(status)
        }
        #expect(statuses.count == 9)
    }

    @Test func onlyRefusalsWaitOutTheRefusalDelay() async throws {
        let limits = RateLimits(refusalDelay: .milliseconds(300))
        for (kind, delayed) in [
            (KeyServerError.Kind.unauthenticated, true), (.proofRefused, true), (.rateLimited(retryAfter: 5), true),
            (.gone, false), (.unavailable, false), (.invalidInput, false),
        ] {
            let start = ContinuousClock.now
            await #expect(throws: KeyServerError.self) {
                try await limits.delayingRefusals { throw KeyServerError(kind, "x", "y") }
            }
            let waited = ContinuousClock.now - start
            #expect((waited >= .milliseconds(300)) == delayed, "\(kind) waited \(waited)")
        }
    }

    /// The layers the code layout promises: storage, domain and services
    /// code names no HTTP type; only App, HTTP and Auth do.
    @Test func storageDomainAndServicesImportNoHTTP() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/CofferKeyServer")
        var checked = 0
        for folder in ["Storage", "Domain", "Services"] {
            let dir = root.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name.hasSuffix(".swift") {
                let text = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
                for banned in ["import Hummingbird", "import HTTPTypes", "Problem(", "HTTPResponse"] {
                    #expect(!text.contains(banned), "\(folder)/\(name) uses \(banned)")
                }
                checked += 1
            }
        }
        #expect(checked >= 20)
    }
}
#endif
