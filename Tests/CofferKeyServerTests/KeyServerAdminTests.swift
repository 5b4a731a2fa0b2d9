#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Rotate, retire, shred and undo, through the operator routes.
@Suite struct KeyServerAdminTests {
    @Test(arguments: Backend.allCases) func rotateAndRetire(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: backend)
        let admin = try await server.store.addOperator(name: "ops", scopes: OperatorScope.all)
        let alice = try issuer.token("alice")
        try await server.run { client in
            let fetch = { (uri: String) async throws -> (HTTPResponse.Status, [String: Any]) in
                try await client.execute(
                    uri: uri, method: uri.contains("versions") ? .get : .post, headers: bearer(alice)
                ) { ($0.status, try json($0)) }
            }
            let admin = { (route: String, payload: [String: Any]) async throws -> TestResponse in
                try await client.execute(
                    uri: "/v1/admin/\(route)", method: .post, headers: bearer(admin), body: try body(payload))
            }
            let first = try await fetch("/v1/keys/notes").1
            let rotated = try await admin("keys/rotate", ["subject": "alice", "purpose": "notes"])
            #expect(rotated.status == .ok)
            let info = try json(rotated)
            #expect(info["version"] as? Int == 2)
            #expect(info["key"] == nil)
            let second = try await fetch("/v1/keys/notes").1
            #expect(second["version"] as? Int == 2)
            #expect(second["keyId"] as? String == info["keyId"] as? String)
            #expect(second["key"] as? String != first["key"] as? String)
            // The old version stays readable for data written under it.
            #expect(try await fetch("/v1/keys/notes/versions/1").1["key"] as? String == first["key"] as? String)

            let retire = try await admin("keys/retire", ["subject": "alice", "purpose": "notes", "minimumVersion": 2])
            #expect(retire.status == .noContent)
            let retired = try await client.execute(
                uri: "/v1/keys/notes/versions/1", method: .get, headers: bearer(alice))
            try expectProblem(retired, .gone, "key-retired")
            #expect(try await fetch("/v1/keys/notes/versions/2").0 == .ok)
            try expectProblem(
                try await admin("keys/retire", ["subject": "alice", "purpose": "notes", "minimumVersion": 1]),
                .conflict,
                "retire-backwards")
            try expectProblem(
                try await admin("keys/retire", ["subject": "alice", "purpose": "notes", "minimumVersion": 3]),
                .conflict, "minimum-above-current")
            try expectProblem(
                try await admin("keys/retire", ["subject": "alice", "purpose": "notes", "minimumVersion": 0]),
                .badRequest, "invalid-minimum-version")
            try expectProblem(
                try await admin("keys/rotate", ["subject": "alice", "purpose": "notes", "minimumVersion": 2]),
                .badRequest, "body-malformed")
            try expectProblem(
                try await admin("keys/retire", ["subject": "nobody", "purpose": "notes", "minimumVersion": 1]),
                .notFound, "key-not-found")
            try expectProblem(try await admin("keys/rotate", ["subject": "alice"]), .badRequest, "body-malformed")
        }
    }

    @Test(arguments: Backend.allCases) func operatorTokensNeedTheirScopeAndUsersCannotAdminister(_ backend: Backend)
        async throws
    {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: backend)
        let rotator = try await server.store.addOperator(name: "rotator", scopes: [.rotate])
        let user = try issuer.token("alice")
        try await server.run { client in
            let call = { (token: String, route: String) async throws -> TestResponse in
                try await client.execute(
                    uri: "/v1/admin/\(route)", method: .post, headers: bearer(token),
                    body: try body(
                        route == "keys/retire"
                            ? ["subject": "alice", "purpose": "notes", "minimumVersion": 1]
                            : route == "keys/rotate"
                                ? ["subject": "alice", "purpose": "notes", "create": true] : ["subject": "alice"]))
            }
            #expect(try await call(rotator, "keys/rotate").status == .ok)
            try expectProblem(try await call(rotator, "keys/retire"), .forbidden, "scope-missing")
            try expectProblem(try await call(rotator, "subjects/shred"), .forbidden, "scope-missing")
            try expectProblem(try await call(user, "keys/rotate"), .unauthorized, "operator-token-invalid")
            let forged = "cofop_" + String(rotator.dropFirst(6).reversed())
            try expectProblem(try await call(forged, "keys/rotate"), .unauthorized, "operator-token-invalid")
            try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(rotator)) {
                try expectProblem($0, .forbidden, "operator-token-refused")
            }
        }
        #expect(try await server.store.removeOperator(name: "rotator"))
        #expect(try await server.store.operatorFor(token: rotator) == nil)
        await #expect(throws: KeyServerError.self) {
            try await server.store.addOperator(name: "x", scopes: [OperatorScope("root")])
        }
    }

    @Test(arguments: Backend.allCases) func shredWaitsOutItsUndoWindowThenIsGoneForEver(_ backend: Backend) async throws
    {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: backend)
        let admin = try await server.store.addOperator(name: "ops", scopes: [.shred])
        let tokens = try issuer.mint([
            ["key": "es", "claims": Issuer.claims("alice")], ["key": "es", "claims": Issuer.claims("bob")],
        ])
        try await server.run { client in
            let fetch = { (token: String) async throws -> TestResponse in
                try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(token))
            }
            let admin = { (route: String, payload: [String: Any]) async throws -> TestResponse in
                try await client.execute(
                    uri: "/v1/admin/subjects/\(route)", method: .post, headers: bearer(admin), body: try body(payload))
            }
            let before = try json(try await fetch(tokens[0]))["key"] as? String
            #expect(try await fetch(tokens[1]).status == .ok)
            #expect(try await admin("shred", ["subject": "alice", "undoWindowSeconds": 3600]).status == .ok)
            try expectProblem(try await fetch(tokens[0]), .conflict, "shred-pending")
            #expect(try await admin("undo-shred", ["subject": "alice"]).status == .noContent)
            #expect(try json(try await fetch(tokens[0]))["key"] as? String == before)
            try expectProblem(try await admin("undo-shred", ["subject": "alice"]), .notFound, "shred-not-pending")

            #expect(try await admin("shred", ["subject": "alice", "undoWindowSeconds": 3600]).status == .ok)
            server.skip.withLock { $0 = 3601 }
            try expectProblem(try await fetch(tokens[0]), .gone, "key-shredded")
            #expect(try await server.store.sweep() == 1)
            #expect(try server.count("SELECT count(*) FROM keys WHERE subject = 'alice'") == 0)
            try expectProblem(try await fetch(tokens[0]), .gone, "key-shredded")
            try expectProblem(try await admin("undo-shred", ["subject": "alice"]), .gone, "key-shredded")
            try expectProblem(
                try await admin("shred", ["subject": "alice", "undoWindowSeconds": 0]), .gone, "key-shredded")
            // Bob is untouched.
            #expect(try await fetch(tokens[1]).status == .ok)
            try expectProblem(
                try await admin("shred", ["subject": "bob", "undoWindowSeconds": -1]), .badRequest,
                "invalid-undo-window")
        }
    }

    /// Servers of two realms on one database (and so one KEK ring, which
    /// seals the audit chain's link key) accept only their own realm's
    /// operators (security review 3, G14); an operator made before
    /// operators had realms (its realm NULL, as the migration leaves it) is
    /// refused with a code that says what to do.
    @Test(arguments: Backend.allCases) func anOperatorTokenIsAcceptedOnlyInItsRealm(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let kek = KeyRing()
        let main = try await TestServer(issuer: issuer, kek: kek, backend: backend)
        let other = try await TestServer(issuer: issuer, kek: kek, reopening: main, realm: "other")
        let ofMain = try await main.store.addOperator(name: "ops-main", scopes: [.rotate])
        let ofOther = try await main.store.addOperator(name: "ops-other", scopes: [.rotate], realm: "other")
        #expect(try await main.store.operators().map(\.realm) == ["default", "other"])
        await #expect(throws: KeyServerError.self) {
            try await main.store.addOperator(name: "ops-bad", scopes: [.rotate], realm: "Bad Realm!")
        }
        /// A rotation by `token` at `server`: done, or refused with `refusal`.
        func rotate(_ server: TestServer, _ token: String, refusal: String? = nil) async throws {
            try await server.run { client in
                let response = try await client.execute(
                    uri: "/v1/admin/keys/rotate", method: .post, headers: bearer(token),
                    body: try body(["subject": "alice", "purpose": "notes", "create": true]))
                if let refusal {
                    try expectProblem(response, .unauthorized, refusal)
                } else {
                    #expect(response.status == .ok)
                }
            }
        }
        try await rotate(main, ofMain)
        try await rotate(main, ofOther, refusal: "operator-token-invalid")
        try await rotate(other, ofOther)
        try await rotate(other, ofMain, refusal: "operator-token-invalid")

        try main.execute("UPDATE operators SET realm = NULL WHERE name = 'ops-main'")
        try await rotate(main, ofMain, refusal: "operator-token-unbound")
        try await rotate(other, ofMain, refusal: "operator-token-unbound")
    }
}
#endif
