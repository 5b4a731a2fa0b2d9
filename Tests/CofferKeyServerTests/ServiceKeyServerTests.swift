#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// `POST /v1/service/keys` (scope `keys:release`): a subject's key released
/// to a service keeping the subject's data — a CofferStore's tenant keys
/// held at the server (docs/store.md, "Tenants"). Only a token that names
/// the scope has it; each release is audited with the operator as actor;
/// a shredded subject answers 410; the body is checked.
@Suite struct ServiceKeyServerTests {
    @Test func theDefaultScopesReturnNoKey() {
        #expect(!OperatorScope.all.contains(.release))
        #expect(OperatorScope.known.contains(.release))
    }

    @Test(arguments: Backend.allCases) func aServiceGetsTheSubjectsOwnKeyAuditedUnderItsName(_ backend: Backend)
        async throws
    {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: backend)
        let service = try await server.store.addOperator(name: "tenant-store", scopes: [.release])
        let everyOther = try await server.store.addOperator(name: "admin", scopes: OperatorScope.all)
        let shredder = try await server.store.addOperator(name: "shredder", scopes: [.shred])
        let elsewhere = try await server.store.addOperator(name: "other-realm", scopes: [.release], realm: "other")
        try await server.run { client in
            let release = { (payload: [String: Any], token: String) async throws -> TestResponse in
                try await client.execute(
                    uri: "/v1/service/keys", method: .post, headers: bearer(token), body: try body(payload))
            }
            // Made on first use, and the same key the subject itself is given.
            let first = try await release(["subject": "acme", "purpose": "coffer-store-tenant"], service)
            #expect(first.status == .ok)
            #expect(first.headers[.cacheControl] == "no-store")
            let released = try json(first)
            #expect(released["version"] as? Int == 1)
            let own = try await client.execute(
                uri: "/v1/keys/coffer-store-tenant", method: .post, headers: bearer(try issuer.token("acme")))
            #expect(try json(own)["key"] as? String == released["key"] as? String)
            #expect(try json(own)["keyId"] as? String == released["keyId"] as? String)
            let again = try await release(["subject": "acme", "purpose": "coffer-store-tenant", "version": 1], service)
            #expect(try json(again)["key"] as? String == released["key"] as? String)
            try expectProblem(
                try await release(["subject": "acme", "purpose": "coffer-store-tenant", "version": 2], service),
                .notFound, "key-not-found")
            // Another tenant's key is another key.
            let globex = try json(try await release(["subject": "globex", "purpose": "coffer-store-tenant"], service))
            #expect(globex["key"] as? String != released["key"] as? String)

            // The scope is needed (every default scope together lacks it), and the realm.
            try expectProblem(
                try await release(["subject": "acme", "purpose": "coffer-store-tenant"], everyOther), .forbidden,
                "scope-missing")
            try expectProblem(
                try await release(["subject": "acme", "purpose": "coffer-store-tenant"], elsewhere), .unauthorized,
                "operator-token-invalid")
            try expectProblem(
                try await client.execute(
                    uri: "/v1/service/keys", method: .post, headers: bearer(try issuer.token("acme")),
                    body: try body(["subject": "acme", "purpose": "coffer-store-tenant"])),
                .unauthorized, "operator-token-invalid")
            // The body, checked.
            try expectProblem(try await release(["subject": "acme"], service), .badRequest, "body-malformed")
            try expectProblem(
                try await release(["subject": "acme", "purpose": "Bad Purpose"], service), .badRequest,
                "invalid-purpose")
            try expectProblem(
                try await release(["subject": "", "purpose": "coffer-store-tenant"], service), .badRequest,
                "invalid-subject")
            try expectProblem(
                try await release(["subject": "acme", "purpose": "coffer-store-tenant", "version": 0], service),
                .badRequest, "invalid-version")
            try expectProblem(
                try await release(["subject": "acme", "purpose": "coffer-store-tenant", "device": "d"], service),
                .badRequest, "body-malformed")
            let get = try await client.execute(uri: "/v1/service/keys", method: .get, headers: bearer(service))
            #expect(get.status == .methodNotAllowed)

            // A shred at the server is final for the service too.
            let shred = try await client.execute(
                uri: "/v1/admin/subjects/shred", method: .post, headers: bearer(shredder),
                body: try body(["subject": "acme", "undoWindowSeconds": 0]))
            #expect(shred.status == .ok)
            try expectProblem(
                try await release(["subject": "acme", "purpose": "coffer-store-tenant", "version": 1], service), .gone,
                "key-shredded")
            try expectProblem(
                try await release(["subject": "acme", "purpose": "coffer-store-tenant"], service), .gone,
                "key-shredded")
            #expect(try await release(["subject": "globex", "purpose": "coffer-store-tenant"], service).status == .ok)
        }
        // Every release to the service names it in the audit chain.
        #expect(
            try server.count(
                "SELECT count(*) FROM audit WHERE action = 'release' AND actor = 'operator:tenant-store' AND subject = 'acme'"
            ) == 2)
        #expect(
            try server.count(
                "SELECT count(*) FROM audit WHERE action = 'create' AND actor = 'operator:tenant-store' AND subject = 'acme'"
            ) == 1)
        #expect(
            try server.count(
                "SELECT count(*) FROM audit WHERE action = 'release' AND actor = 'subject:acme' AND subject = 'acme'")
                == 1)
        #expect(try await server.store.verifyAudit().broken == nil)
    }
}
#endif
