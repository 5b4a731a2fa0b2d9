#if Server
import Coffer
import CofferKeyServer
@testable import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Refused operator calls are in the audit chain too (operator trial 4,
/// friction 9; issue 59, part 5): who was refused (the operator's name,
/// or `operator:unknown`), the problem's code, the method and the route —
/// never the token — and at most 60 a minute per process.
@Suite struct RefusalAuditTests {
    @Test(arguments: Backend.allCases) func refusedOperatorCallsAreAudited(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: backend)
        let rotator = try await server.store.addOperator(name: "rotator", scopes: [.rotate])
        let reader = try await server.store.addOperator(name: "reader", scopes: [.read])
        let alice = try issuer.token("alice")
        try await server.run { client in
            let get = { (uri: String, token: String) async throws -> TestResponse in
                try await client.execute(uri: uri, method: .get, headers: bearer(token))
            }
            try expectProblem(try await get("/v1/admin/keys?subject=alice", rotator), .forbidden, "scope-missing")
            try expectProblem(
                try await get("/v1/admin/subjects", alice), .unauthorized, "operator-token-invalid")
            #expect(try await get("/v1/admin/subjects", reader).status == .ok)
        }
        let refused = { (actor: String, detail: String) throws -> Int in
            try server.count(
                "SELECT count(*) FROM audit WHERE action = 'refused' AND actor = '\(actor)' AND detail = '\(detail)'")
        }
        #expect(try refused("operator:rotator", "scope-missing GET /v1/admin/keys") == 1)
        #expect(try refused("operator:unknown", "operator-token-invalid GET /v1/admin/subjects") == 1)
        // Only the refusals: the reader's call is not one, and no token is written.
        #expect(try server.count("SELECT count(*) FROM audit WHERE action = 'refused'") == 2)
        #expect(try server.count("SELECT count(*) FROM audit WHERE detail LIKE '%\(alice.prefix(12))%'") == 0)
        // The chain still verifies with the refusals in it.
        let verified = try await server.store.verifyAudit()
        #expect(
            verified.broken == nil && verified.checked >= 2,
            "\(verified.checked) \(String(describing: verified.broken))")
    }

    @Test func atMostSixtyAMinuteAndTheRestCounted() {
        let audit = RefusalAudit()
        for _ in 0..<60 { #expect(audit.admit(now: 120) == 0) }
        #expect(audit.admit(now: 150) == nil)
        #expect(audit.admit(now: 179) == nil)
        // The next minute's first entry says how many were not written.
        #expect(audit.admit(now: 180) == 2)
        #expect(audit.admit(now: 181) == 0)
    }
}
#endif
