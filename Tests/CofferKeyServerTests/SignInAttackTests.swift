#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// Every class of JWT attack, made by PyJWT (or by hand in
/// scripts/jwt-tool.py where PyJWT refuses to make it), is refused with
/// its own problem code, and no key is made for any of them.
@Suite struct SignInAttackTests {
    @Test func everyForgedOrMisusedTokenIsRefused() async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer)
        let now = Int(Date().timeIntervalSince1970)
        let good = Issuer.claims("mallory")
        func with(_ change: [String: Any]) -> [String: Any] { good.merging(change) { $1 } }
        var without = good
        without["sub"] = nil
        var noExpiry = good
        noExpiry["exp"] = nil
        let cases: [(String, [String: Any])] = [
            ("token-algorithm-refused", ["key": "es", "claims": good, "attack": "none"]),
            ("token-algorithm-refused", ["key": "rs", "claims": good, "attack": "hs256-public-key"]),
            ("token-algorithm-refused", ["key": "es", "claims": good, "attack": "hs256-public-key"]),
            // RS512 and PS256 with the issuer's own RSA key: not on the list.
            ("token-algorithm-refused", ["key": "rs", "claims": good, "alg": "RS512"]),
            ("token-algorithm-refused", ["key": "rs", "claims": good, "alg": "PS256"]),
            // ES256 claimed for the RSA key's kid: the key's algorithm rules.
            ("token-algorithm-refused", ["key": "es", "kid": "rs", "claims": good]),
            ("token-key-unknown", ["key": "stranger", "claims": good]),
            ("token-key-unknown", ["key": "es", "kid": NSNull(), "claims": good]),
            // Another issuer's key under this issuer's kid.
            ("token-signature-invalid", ["key": "stranger", "kid": "es", "claims": good]),
            ("token-expired", ["key": "es", "claims": with(["exp": now - 120])]),
            ("token-expired", ["key": "es", "claims": noExpiry]),
            ("token-not-yet-valid", ["key": "es", "claims": with(["nbf": now + 600])]),
            ("token-not-yet-valid", ["key": "es", "claims": with(["iat": now + 600])]),
            ("token-audience-mismatch", ["key": "es", "claims": with(["aud": "someone-else"])]),
            ("token-audience-mismatch", ["key": "es", "claims": with(["aud": ["a", "b"]])]),
            ("token-issuer-mismatch", ["key": "ed", "claims": with(["iss": "https://evil.test"])]),
            ("token-subject-missing", ["key": "rs", "claims": without]),
            ("token-subject-missing", ["key": "es", "claims": with(["sub": 42])]),
            ("token-malformed", ["key": "es", "claims": with(["padding": String(repeating: "x", count: 9000)])]),
            ("token-malformed", ["key": "es", "claims": good, "headers": ["crit": ["exp"]]]),
        ]
        let tokens = try issuer.mint(cases.map(\.1))
        let handMade: [(String, String)] = [
            ("token-malformed", "not-a-token"),
            ("token-malformed", "a.b"),
            ("token-malformed", "a.b.c.d"),
            ("token-malformed", "e30.e30.!!!"),
            ("token-malformed", "W10.W10.AA"),
            ("token-malformed", String(repeating: "A", count: 20000)),
        ]
        // Within the skew, a token just past its expiry still works.
        let valid = try issuer.mint([
            ["key": "es", "claims": with(["exp": now - 20])],
            ["key": "es", "claims": with(["aud": ["x", Issuer.audience]])],
        ])
        // (code, what the case is, token)
        let attempts = zip(cases, tokens).map { ($0.0.0, "\($0.0.1)", $0.1) } + handMade.map { ($0.0, $0.1, $0.1) }
        try await server.run { client in
            for (code, what, token) in attempts {
                try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(token)) { response in
                    #expect(response.status == .unauthorized, "\(what.prefix(300))")
                    try expectProblem(response, .unauthorized, code)
                }
            }
            for token in valid {
                try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(token)) {
                    #expect($0.status == .ok)
                }
            }
            try await client.execute(
                uri: "/v1/keys/notes", method: .post, headers: [.authorization: "Basic bWFsbG9yeTp4"]
            ) { try expectProblem($0, .unauthorized, "token-missing") }
        }
        // Only the two valid tokens' subject got a key.
        #expect(try server.count("SELECT count(DISTINCT subject) FROM keys") == 1)
    }

    @Test func theIssuersKeyRotationIsPickedUpOnAnUnknownKid() async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer)
        try await server.run { client in
            let early = try issuer.mint([["key": "es", "claims": Issuer.claims("erin")]])[0]
            try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(early)) {
                #expect($0.status == .ok)
            }
            try issuer.rotate()
            let rotated = try issuer.mint([["key": "es2", "claims": Issuer.claims("erin")]])[0]
            try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(rotated)) {
                #expect($0.status == .ok)
            }
        }
    }

    @Test func oneSubjectNeverObtainsAnothersKeys() async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer)
        let tokens = try issuer.mint([
            ["key": "es", "claims": Issuer.claims("alice")], ["key": "es", "claims": Issuer.claims("bob")],
        ])
        try await server.run { client in
            let alice = try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(tokens[0])) {
                try json($0)["key"] as? String
            }
            // Bob, by every route and device, gets his own keys or nothing.
            var seen: [String?] = []
            for uri in ["/v1/keys/notes", "/v1/keys/notes/versions/1", "/v1/keys/notes/versions/1?device="] {
                let method: HTTPRequest.Method = uri.contains("versions") ? .get : .post
                seen.append(
                    try await client.execute(uri: uri, method: method, headers: bearer(tokens[1])) {
                        try json($0)["key"] as? String
                    })
            }
            #expect(alice != nil)
            #expect(!seen.contains(alice))
        }
        // Alice's row copied over Bob's does not open: the context binds the subject.
        _ = try server.count(
            "UPDATE keys SET wrapped = (SELECT wrapped FROM keys WHERE subject = 'alice') WHERE subject = 'bob' RETURNING 1"
        )
        await #expect(throws: KeyServerError.self) {
            _ = try await server.store.current(try KeyName(realm: "default", subject: "bob", purpose: "notes"))
        }
    }
}

/// What a JWKS may hold.
@Suite struct JWKSTests {
    static func verifier(_ jwks: String) async throws -> SignInVerifier {
        try await SignInVerifier(policy: TokenPolicy(issuer: "i", audience: "a"), jwks: { Data(jwks.utf8) })
    }

    @Test func privateSymmetricAndUnusableKeysAreRefusedOrLeftOut() async throws {
        let issuer = try Issuer()
        let jwks = try String(contentsOfFile: issuer.folder + "/jwks.json", encoding: .utf8)
        _ = try await Self.verifier(jwks)
        // A private key (d) or a symmetric one (k): the whole set is refused.
        let set = try JSONSerialization.jsonObject(with: Data(jwks.utf8)) as! [String: Any]
        var keys = set["keys"] as! [[String: Any]]
        var withPrivate = keys
        withPrivate[0]["d"] = "AAAA"
        let refusedPrivate = String(
            decoding: try JSONSerialization.data(withJSONObject: ["keys": withPrivate]), as: UTF8.self)
        await #expect(throws: CofferError.self) { _ = try await Self.verifier(refusedPrivate) }
        await #expect(throws: CofferError.self) {
            _ = try await Self.verifier(#"{"keys":[{"kty":"oct","kid":"h","k":"c2VjcmV0"}]}"#)
        }
        // Nothing usable: P-384, encryption keys, no kid, a 1024-bit RSA key, a mismatched alg.
        keys = keys.map { key in
            var key = key
            switch key["kid"] as? String {
            case "es": key["use"] = "enc"
            case "rs": key["n"] = String((key["n"] as! String).prefix(171))
            default: key["alg"] = "ES256"
            }
            return key
        }
        let unusable = String(decoding: try JSONSerialization.data(withJSONObject: ["keys": keys]), as: UTF8.self)
        await #expect(throws: CofferError.self) { _ = try await Self.verifier(unusable) }
        for garbage in ["", "[]", "{}", #"{"keys":{}}"#, #"{"keys":[1,2]}"#, String(repeating: "[", count: 10000)] {
            await #expect(throws: CofferError.self) { _ = try await Self.verifier(garbage) }
        }
    }
}

/// The issuer's keys fetched from its URL.
@Suite struct JWKSURLTests {
    @Test func keysComeFromTheIssuersURLAndItsRotationIsFetched() async throws {
        let issuer = try Issuer()
        let file = issuer.folder + "/jwks.json"
        let fetches = Locked(0)
        let router = Router()
        router.get("/jwks") { _, _ -> Response in
            fetches.withLock { $0 += 1 }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try Data(contentsOf: URL(fileURLWithPath: file)))))
        }
        router.get("/missing") { _, _ in Response(status: .notFound) }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let base = "http://127.0.0.1:\(client.port!)"
            let verifier = try await SignInVerifier(
                policy: TokenPolicy(issuer: Issuer.name, audience: Issuer.audience, refreshFloor: 0),
                jwks: try SignInVerifier.issuerKeys(at: URL(string: base + "/jwks")!, http: KeyClientTests.http))
            #expect(try await verifier.subject(of: Substring(try issuer.token("uri"))) == "uri")
            try issuer.rotate()
            let rotated = try issuer.mint([["key": "es2", "claims": Issuer.claims("uri")]])[0]
            #expect(try await verifier.subject(of: Substring(rotated)) == "uri")
            #expect(fetches.withLock { $0 } == 2)
            await #expect(throws: CofferError.self) {
                _ = try await SignInVerifier(
                    policy: TokenPolicy(issuer: Issuer.name, audience: Issuer.audience),
                    jwks: try SignInVerifier.issuerKeys(at: URL(string: base + "/missing")!, http: KeyClientTests.http))
            }
        }
        #expect(throws: CofferError.self) {
            _ = try SignInVerifier.issuerKeys(at: URL(string: "http://issuer.example.com/jwks")!)
        }
    }
}
#endif
