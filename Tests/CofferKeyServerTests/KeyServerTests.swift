#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The key routes, live on loopback, with tokens from PyJWT.
@Suite struct KeyServerTests {
    @Test func healthAndProblemsCarryARequestID() async throws {
        let server = try await TestServer(issuer: try Issuer())
        try await server.run { client in
            try await client.execute(uri: "/v1/health", method: .get) { response in
                #expect(response.status == .ok)
                let document = try json(response)
                #expect(document["status"] as? String == "ok")
                #expect(response.headers[HTTPField.Name("X-Request-Id")!]?.count == 16)
            }
            try await client.execute(uri: "/v1/ready", method: .get) { response in
                #expect(response.status == .ok)
                let document = try json(response)
                #expect(document["status"] as? String == "ready")
            }
            try await client.execute(uri: "/v1/nothing", method: .get) { try expectProblem($0, .notFound, "not-found") }
            try await client.execute(uri: "/v1/keys/notes", method: .post) {
                try expectProblem($0, .unauthorized, "token-missing")
                #expect($0.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
            }
        }
    }

    @Test(arguments: Backend.allCases) func theFirstRequestMakesTheKeyAndLaterOnesGetTheSame(_ backend: Backend)
        async throws
    {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: backend)
        let tokens = try issuer.mint(
            ["es", "rs", "ed"].map { ["key": $0, "claims": Issuer.claims("alice")] } + [
                ["key": "es", "claims": Issuer.claims("bob")]
            ])
        try await server.run { client in
            var keys: [String] = []
            for token in tokens.prefix(3) {
                try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(token)) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.cacheControl] == "no-store")
                    let document = try json(response)
                    #expect(document["purpose"] as? String == "notes")
                    #expect(document["version"] as? Int == 1)
                    #expect((document["keyId"] as? String)?.count == 16)
                    let key = try #require(document["key"] as? String)
                    #expect(Data(base64Encoded: key)?.count == 32)
                    keys.append(key)
                }
            }
            // One key, whichever of the issuer's algorithms signed the token.
            #expect(Set(keys).count == 1)
            let other = { (uri: String, token: String, body: ByteBuffer?) async throws -> String in
                try await client.execute(uri: uri, method: .post, headers: bearer(token), body: body) { response in
                    #expect(response.status == .ok)
                    return try json(response)["key"] as? String ?? ""
                }
            }
            let photos = try await other("/v1/keys/photos", tokens[0], nil)
            let device = try await other("/v1/keys/notes", tokens[0], try body(["device": "iphone-1"]))
            let bob = try await other("/v1/keys/notes", tokens[3], nil)
            #expect(Set([keys[0], photos, device, bob]).count == 4)
            #expect(try await other("/v1/keys/notes", tokens[0], try body(["device": "iphone-1"])) == device)
            // A batch gives the same keys.
            try await client.execute(
                uri: "/v1/keys", method: .post, headers: bearer(tokens[0]),
                body: try body(["purposes": ["notes", "photos"]])
            ) { response in
                let batch = try #require(try json(response)["keys"] as? [[String: Any]])
                #expect(batch.map { $0["key"] as? String } == [keys[0], photos])
            }
        }
    }

    @Test(arguments: Backend.allCases) func manyFirstRequestsAtOnceMakeExactlyOneKey(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: backend)
        let token = try issuer.token("carol")
        try await server.run { client in
            let keys = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(token)) {
                            try json($0)["key"] as? String ?? "missing"
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(keys.count == 100)
            #expect(Set(keys).count == 1)
            #expect(!keys.contains("missing"))
        }
        let rows = try server.count("SELECT count(*) FROM keys")
        #expect(rows == 1)
    }

    @Test(arguments: Backend.allCases) func badBodiesAndNamesAreClearRefusals(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: backend)
        let token = try issuer.token("dave")
        try await server.run { client in
            let post = { (uri: String, payload: ByteBuffer?) async throws -> TestResponse in
                try await client.execute(uri: uri, method: .post, headers: bearer(token), body: payload)
            }
            try expectProblem(
                try await post("/v1/keys/notes", ByteBuffer(string: "{not json")), .badRequest, "body-malformed")
            try expectProblem(
                try await post("/v1/keys/notes", ByteBuffer(repeating: UInt8(ascii: " "), count: 100_000)),
                .contentTooLarge, "body-too-large")
            try expectProblem(try await post("/v1/keys/NOTES", nil), .badRequest, "invalid-purpose")
            try expectProblem(
                try await post("/v1/keys/notes", try body(["device": "a/b"])), .badRequest, "invalid-device")
            try expectProblem(
                try await post("/v1/keys", try body(["purposes": Array(repeating: "x", count: 2)])), .badRequest,
                "invalid-batch")
            try expectProblem(
                try await post("/v1/keys", try body(["purposes": [String]()])), .badRequest, "invalid-batch")
            try await client.execute(uri: "/v1/keys/notes/versions/0", method: .get, headers: bearer(token)) {
                try expectProblem($0, .badRequest, "invalid-version")
            }
            try await client.execute(uri: "/v1/keys/notes/versions/7", method: .get, headers: bearer(token)) {
                try expectProblem($0, .notFound, "key-not-found")
            }
            try await client.execute(uri: "/v1/health", method: .delete) {
                #expect($0.status.code >= 400 && $0.status.code < 500)
            }
        }
    }

    /// A key row rebuilt by a database writer without its column types
    /// (its version made text, with sqlite3 beside the server) is a
    /// database error: not read as no key, which would make a new one.
    @Test func aKeyRowOfTheWrongTypeIsAnErrorNotAMissingKey() async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: .sqlite)
        let token = try issuer.token("erin")
        try await server.run { client in
            try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(token)) {
                #expect($0.status == .ok)
            }
            try server.execute(
                """
                CREATE TABLE old_keys AS SELECT * FROM keys; DROP TABLE keys;
                CREATE TABLE keys (realm, subject, device, purpose, version, wrapped, created,
                  PRIMARY KEY (realm, subject, device, purpose, version));
                INSERT INTO keys SELECT realm, subject, device, purpose, 'one', wrapped, created FROM old_keys;
                DROP TABLE old_keys;
                """)
            try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(token)) {
                try expectProblem($0, .internalServerError, "database-error")
            }
        }
        #expect(try server.count("SELECT count(*) FROM keys") == 1)
    }

    /// The first value of `sql`'s first row, or -1 when it gives no row
    /// (a table rebuilt, say), by python's sqlite3 beside the server;
    /// throws when the statement fails.
    static func rowCount(_ path: String, _ sql: String) throws -> Int {
        let run = try Spawned.run(
            "/usr/bin/env",
            [
                "python3", "-c",
                "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); r=c.execute(sys.argv[2]).fetchone(); c.commit(); "
                    + "print(-1 if r is None else r[0])",
                path, sql,
            ])
        guard run.status == 0 else { throw CofferError(.io, "python's sqlite3 failed on \(sql)") }
        return Int(run.text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }
}
#endif
