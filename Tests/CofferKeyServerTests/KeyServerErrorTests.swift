#if Server
import Foundation
import HTTPTypes
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// The domain's errors carry no HTTP; the edge chooses status and headers.
@Suite struct KeyServerErrorTests {
    @Test func eachKindBecomesItsStatusAndHeadersAtTheEdge() {
        let cases: [(KeyServerError.Kind, Int64?, Int, HTTPField.Name?, String?)] = [
            (.invalidInput, nil, 400, nil, nil),
            (.unauthenticated, nil, 401, .wwwAuthenticate, "Bearer error=\"invalid_token\""),
            (.proofRefused, nil, 401, .wwwAuthenticate, "DPoP error=\"invalid_dpop_proof\", algs=\"ES256\""),
            (.forbidden, nil, 403, nil, nil),
            (.notFound, nil, 404, nil, nil),
            (.conflict, nil, 409, nil, nil),
            (.gone, nil, 410, nil, nil),
            (.rateLimited, 17, 429, .retryAfter, "17"),
            (.rateLimited, 0, 429, .retryAfter, "1"),
            (.unavailable, nil, 503, .retryAfter, "1"),
            (.failed, nil, 500, nil, nil),
        ]
        var statuses: Set<Int> = []
        for (kind, retryAfter, status, field, value) in cases {
            let problem = Problem(
                KeyServerError(.init("some-code", kind), "what happened", retryAfter: retryAfter))
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
            (KeyServerError.Kind.unauthenticated, true), (.proofRefused, true), (.rateLimited, true),
            (.gone, false), (.unavailable, false), (.invalidInput, false),
        ] {
            let start = ContinuousClock.now
            await #expect(throws: KeyServerError.self) {
                try await limits.delayingRefusals { throw KeyServerError(.init("x", kind), "y", retryAfter: 5) }
            }
            let waited = ContinuousClock.now - start
            #expect((waited >= .milliseconds(300)) == delayed, "\(kind) waited \(waited)")
        }
    }

    /// Every code the server raises is documented in docs/openapi.yaml's
    /// list of problem codes, and every code listed there is one it raises
    /// (or one the HTTP edge makes of its own: not-found, method-not-allowed,
    /// body-too-large, DPoP's challenges).
    @Test func theCodesAreTheOnesTheOpenAPIDocumentLists() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let document = try String(
            contentsOf: root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        let start = try #require(document.range(of: "Stable. token-missing"))
        let end = try #require(document.range(of: "requestId:", range: start.upperBound..<document.endIndex))
        let listed = Set(
            document[start.lowerBound..<end.lowerBound].split(whereSeparator: { !($0.isLetter || $0 == "-") })
                .map(String.init).filter { $0.contains("-") && $0.first!.isLowercase })
        let raised = Set(KeyServerError.Code.all.map(\.name))
        #expect(raised.count == KeyServerError.Code.all.count, "a code is listed twice in Code.all")
        #expect(raised.subtracting(listed).isEmpty, "not in docs/openapi.yaml: \(raised.subtracting(listed).sorted())")
        let edge: Set = ["not-found", "method-not-allowed", "body-too-large", "dpop-required", "dpop-nonce-required"]
        #expect(
            listed.subtracting(raised).subtracting(edge).isEmpty,
            "listed but never raised: \(listed.subtracting(raised).subtracting(edge).sorted())")
    }
}
#endif
