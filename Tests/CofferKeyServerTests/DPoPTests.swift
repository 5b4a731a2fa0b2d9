#if Server
import Coffer
import CofferKeyClient
import CofferKeyClientNIO
import CofferKeyServer
import CofferKeyServerCore
import CofferKeychain
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Device-bound requests (RFC 9449) against proofs made by an independent
/// client (PyJWT and pyca/cryptography, scripts/jwt-tool.py proof): each
/// attack is refused with its problem code.
@Suite struct DPoPTests {
    static let site = "https://keys.test"
    static let policy = DPoPPolicy(publicURL: site)
    static var dpopField: HTTPField.Name { HTTPField.Name("DPoP")! }
    static var nonceField: HTTPField.Name { HTTPField.Name("DPoP-Nonce")! }

    static func headers(_ token: String, proof: String?, scheme: String = "DPoP") -> HTTPFields {
        var fields: HTTPFields = [.authorization: "\(scheme) \(token)"]
        if let proof { fields[dpopField] = proof }
        return fields
    }

    /// The server's current nonce, from the challenge to a proof without one.
    static func nonce(_ client: any TestClientProtocol, _ issuer: Issuer, _ token: String) async throws -> String {
        let proof = try issuer.proofs([
            ["device": "phone", "htm": "POST", "htu": site + "/v1/keys/notes", "token": token]
        ])[0]
        return try await client.execute(
            uri: "/v1/keys/notes", method: .post, headers: headers(token, proof: proof.proof)
        ) { response in
            try expectProblem(response, .unauthorized, "dpop-nonce-required")
            #expect(response.headers[.wwwAuthenticate]?.contains("use_dpop_nonce") == true)
            return try #require(response.headers[nonceField])
        }
    }

    @Test(arguments: Backend.allCases) func aProvedDeviceGetsItsOwnKeyAndEveryAttackIsRefused(_ backend: Backend)
        async throws
    {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: backend, dpop: Self.policy)
        let token = try issuer.token("alice")
        let other = try issuer.token("alice", ["jti": "another token"])
        let url = Self.site + "/v1/keys/notes"
        try await server.run { client in
            let nonce = try await Self.nonce(client, issuer, token)
            let now = Int(Date().timeIntervalSince1970)
            let good: [String: Any] = ["device": "phone", "htm": "POST", "htu": url, "token": token, "nonce": nonce]
            let specs: [[String: Any]] = [
                good, good.merging(["device": "laptop"]) { $1 },
                // The attacks, each otherwise good.
                good.merging(["htu": Self.site + "/v1/keys/photos"]) { $1 },
                good.merging(["htm": "GET"]) { $1 },
                good.merging(["iat": now - 3600]) { $1 },
                good.merging(["iat": now + 3600]) { $1 },
                good.merging(["token": other]) { $1 },
                good.merging(["typ": "JWT"]) { $1 },
                good.merging(["signer": "laptop"]) { $1 },
                good.merging(["nonce": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]) { $1 },
            ]
            let proofs = try issuer.proofs(specs)
            let fetch = { (proof: String?, scheme: String) async throws -> TestResponse in
                try await client.execute(
                    uri: "/v1/keys/notes", method: .post, headers: Self.headers(token, proof: proof, scheme: scheme))
            }
            let phone = try await fetch(proofs[0].proof, "DPoP")
            #expect(phone.status == .ok)
            let phoneKey = try json(phone)
            #expect(phoneKey["device"] as? String == "jkt:" + proofs[0].jkt)
            // The same proof again: refused, at this replica or any other.
            try expectProblem(try await fetch(proofs[0].proof, "DPoP"), .unauthorized, "dpop-proof-replayed")
            // Remembered for the acceptance window and as much again for
            // replicas' clocks to differ (G10): iat + 2·60 + 1.
            let expires = try server.count(
                "SELECT min(expires) FROM \(backend == .sqlite ? "dpop_log" : "dpop_proofs")")
            #expect(
                (now + 121...now + 126).contains(expires), "a spent proof is kept until \(expires - now) s from now")
            // Another device key is another device: another key.
            let laptop = try json(try await fetch(proofs[1].proof, "DPoP"))
            #expect(laptop["key"] as? String != phoneKey["key"] as? String)
            // A bearer token without a proof reaches neither device's key.
            let bearer = try json(try await fetch(nil, "Bearer"))
            #expect(bearer["key"] as? String != phoneKey["key"] as? String && bearer["device"] == nil)
            for (index, what) in [
                (2, "another URL"), (3, "another method"), (4, "a stale iat"), (5, "a future iat"),
                (6, "another token's ath"), (7, "the wrong typ"), (8, "a signature by another key"),
            ] {
                let response = try await fetch(proofs[index].proof, "DPoP")
                try expectProblem(response, .unauthorized, "dpop-proof-invalid")
                #expect(response.headers[.wwwAuthenticate]?.contains("invalid_dpop_proof") == true, "\(what)")
            }
            try expectProblem(try await fetch(proofs[9].proof, "DPoP"), .unauthorized, "dpop-nonce-required")
            // The DPoP scheme without a proof; garbage for a proof; two proofs.
            try expectProblem(try await fetch(nil, "DPoP"), .unauthorized, "dpop-required")
            for junk in ["x", "a.b.c", String(repeating: "A", count: 5000)] {
                try expectProblem(try await fetch(junk, "DPoP"), .unauthorized, "dpop-proof-invalid")
            }
            var two = Self.headers(token, proof: proofs[1].proof)
            two.append(HTTPField(name: Self.dpopField, value: proofs[1].proof))
            try await client.execute(uri: "/v1/keys/notes", method: .post, headers: two) {
                try expectProblem($0, .unauthorized, "dpop-proof-invalid")
            }
        }
    }

    @Test(arguments: Backend.allCases) func boundTokensAndRequiredRealmsNeedTheirKey(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let server = try await TestServer(
            issuer: issuer, backend: backend, dpop: DPoPPolicy(required: true, publicURL: Self.site))
        let plain = try issuer.token("bob")
        let phone = try issuer.proofs([["device": "phone", "htm": "POST", "htu": "x"]])[0].jkt
        let bound = try issuer.token("bob", ["cnf": ["jkt": phone]])
        let url = Self.site + "/v1/keys/notes"
        try await server.run { client in
            // A stolen bearer token alone obtains nothing in a realm that requires DPoP.
            try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(plain)) {
                try expectProblem($0, .unauthorized, "dpop-required")
                #expect($0.headers[.wwwAuthenticate]?.hasPrefix("DPoP") == true)
            }
            let nonce = try await Self.nonce(client, issuer, plain)
            let proofs = try issuer.proofs([
                ["device": "laptop", "htm": "POST", "htu": url, "token": bound, "nonce": nonce],
                ["device": "phone", "htm": "POST", "htu": url, "token": bound, "nonce": nonce],
                ["device": "phone", "htm": "POST", "htu": url, "token": bound, "nonce": nonce],
                ["device": "phone", "htm": "POST", "htu": url, "token": plain, "nonce": nonce],
                [
                    "device": "phone", "htm": "GET", "htu": Self.site + "/v1/keys/notes/versions/1", "token": plain,
                    "nonce": nonce,
                ],
            ])
            // A token bound to the phone's key, proved by the laptop's: refused.
            try await client.execute(
                uri: "/v1/keys/notes", method: .post, headers: Self.headers(bound, proof: proofs[0].proof)
            ) { try expectProblem($0, .unauthorized, "dpop-proof-invalid") }
            // Sent as a Bearer token, even with the right proof: refused.
            try await client.execute(
                uri: "/v1/keys/notes", method: .post,
                headers: Self.headers(bound, proof: proofs[1].proof, scheme: "Bearer")
            ) { try expectProblem($0, .unauthorized, "dpop-required") }
            // Proved by the phone: its key.
            try await client.execute(
                uri: "/v1/keys/notes", method: .post, headers: Self.headers(bound, proof: proofs[2].proof)
            ) { response in
                #expect(response.status == .ok)
                let key = try json(response)
                #expect(key["device"] as? String == "jkt:" + phone)
            }
            // A device named in the body must be the proof's; jkt:… without a proof is refused.
            try await client.execute(
                uri: "/v1/keys/notes", method: .post, headers: Self.headers(plain, proof: proofs[3].proof),
                body: ByteBuffer(string: #"{"device":"someone-else"}"#)
            ) { try expectProblem($0, .forbidden, "dpop-device-mismatch") }
            try await client.execute(
                uri: "/v1/keys/notes/versions/1?device=jkt:\(phone)", method: .get,
                headers: Self.headers(plain, proof: proofs[4].proof)
            ) { #expect($0.status == .ok) }
        }
        let open = try await TestServer(issuer: issuer, backend: backend, dpop: Self.policy)
        try await open.run { client in
            try await client.execute(
                uri: "/v1/keys/notes", method: .post, headers: bearer(plain),
                body: ByteBuffer(string: #"{"device":"jkt:\#(phone)"}"#)
            ) { try expectProblem($0, .forbidden, "dpop-device-mismatch") }
        }
    }

    /// CofferKeyClient with a device key kept in a keychain: proofs made for
    /// each request, the nonce taken from the server's challenge and kept,
    /// the device's own keys; without the key, a realm that requires DPoP
    /// refuses it.
    @Test func theClientProvesItsDevice() async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, dpop: DPoPPolicy(required: true))
        let token = try issuer.token("carol")
        let keychain = InMemoryKeychain()
        let device = try DPoPKey.inKeychain(keychain)
        #expect(try DPoPKey.inKeychain(keychain).thumbprint == device.thumbprint)
        #expect(!"\(device)".contains("d\""))
        try await server.run { client in
            let url = URL(string: "http://127.0.0.1:\(client.port!)")!
            let app = try KeyServerClient(
                server: url, account: "carol", token: { token },
                transport: AsyncHTTPClientTransport(KeyClientTests.http), dpop: device)
            let first = try await app.currentKey(purpose: "notes")
            let again = try await app.currentKey(purpose: "notes")
            #expect(first.key == again.key && !again.fromCache)
            #expect(try await app.key(purpose: "notes", version: 1).key == first.key)
            // Another device: its own key.
            let laptop = try KeyServerClient(
                server: url, account: "carol", token: { token },
                transport: AsyncHTTPClientTransport(KeyClientTests.http), dpop: DPoPKey())
            #expect(try await laptop.currentKey(purpose: "notes").key != first.key)
            // No device key: nothing.
            let plain = try KeyServerClient(
                server: url, account: "carol", token: { token },
                transport: AsyncHTTPClientTransport(KeyClientTests.http))
            let refused = await #expect(throws: KeyClientError.self) {
                _ = try await plain.currentKey(purpose: "notes")
            }
            #expect(refused?.code == KeyClientError.Code("dpop-required"))
        }
        // The server saw the device as jkt: and the key's thumbprint.
        #expect(try server.count("SELECT count(*) FROM keys WHERE device = 'jkt:\(device.thumbprint)'") == 1)
    }
}
#endif
