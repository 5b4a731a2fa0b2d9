#if Server
import Foundation
import NIOHTTP1
import Testing

/// Operator trial 4: a KEK rotation used to leave the server's own secrets
/// (the audit anchor key, the DPoP nonce key) sealed under the KEK key the
/// rotation disables, so `audit verify` failed for good and a replica
/// started afterwards never anchored again. Now `kek rewrap` reseals them
/// and `kek list` shows them; here a rotation is followed by a restarted
/// replica that must anchor, verify and answer DPoP.
@Suite(.serialized) struct KEKRotationSecretsTests {
    @Test(arguments: Backend.allCases)
    func aRotationResealsTheServerSecretsSoAuditAndDPoPGoOn(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let (database, environment) = try backend.serverOptions()
        let site = "https://keys.test"
        let flags = database + ["--require-dpop", "--public-url", site, "--audit-anchor-every", "0.2"]
        var server = try ServerProcess(issuer: issuer, data: data, extra: flags, environment: environment)
        defer { server.stop() }
        let tool = ["--data", data, "--kek-passphrase-file", issuer.folder + "/kek-passphrase"] + database
        let token = try issuer.token("rosa")
        try await Self.fetchWithDPoP(server, issuer: issuer, token: token, site: site, purpose: "notes")
        let before = try await Self.anchoredHead(tool, environment: environment)

        let (rotated, _) = try await KEKRotationTests.serverTool(
            ["kek", "rotate", "--settle", "0"] + tool, environment: environment)
        #expect(rotated == 0)
        let listed = try await KEKRotationTests.serverTool(["kek", "list"] + tool, environment: environment).1
        let lines = listed.split(separator: "\n")
        #expect(
            lines.contains {
                $0.contains("primary")
                    && $0.hasSuffix(", server secrets audit-anchor-key, audit-link-key, dpop-nonce-key")
            },
            "\(listed)")
        #expect(lines.contains { $0.contains("disabled") && $0.hasSuffix("  0 stored keys") }, "\(listed)")

        // A replica started after the rotation opens both secrets: it
        // anchors new entries, the chain verifies, DPoP is answered.
        server.stop()
        server = try ServerProcess(issuer: issuer, data: data, extra: flags, environment: environment)
        try await Self.fetchWithDPoP(server, issuer: issuer, token: token, site: site, purpose: "photos")
        let after = try await Self.anchoredHead(tool, environment: environment)
        #expect(after > before)
    }

    /// A key fetched with a DPoP proof: challenged for a nonce, then granted.
    static func fetchWithDPoP(_ server: ServerProcess, issuer: Issuer, token: String, site: String, purpose: String)
        async throws
    {
        let spec: [String: Any] = [
            "device": "tablet", "htm": "POST", "htu": site + "/v1/keys/" + purpose, "token": token,
        ]
        let challenge = try issuer.proofs([spec])[0].proof
        let (challenged, _, headers) = try await server.address.exchange(
            "/v1/keys/" + purpose, token: token, proof: challenge)
        #expect(challenged == 401)
        let nonce = try #require(headers.first(name: "DPoP-Nonce"))
        let proof = try issuer.proofs([spec.merging(["nonce": nonce]) { $1 }])[0].proof
        let (granted, _, _) = try await server.address.exchange("/v1/keys/" + purpose, token: token, proof: proof)
        #expect(granted == 200)
    }

    /// Waits (up to 10 s) for `audit verify` to say the whole chain is
    /// anchored, and returns its last entry's number; fails on any other answer.
    static func anchoredHead(_ tool: [String], environment: [String: String]) async throws -> Int {
        for _ in 0..<100 {
            let (status, out) = try await KEKRotationTests.serverTool(
                ["audit", "verify"] + tool, environment: environment)
            #expect(status == 0, "\(out)")
            guard status == 0 else { return 0 }
            // "audit chain intact: N entries, head N:…, anchored through entry M, links keyed from entry 1"
            // (every entry of a server made by this version is keyed).
            #expect(out.hasSuffix(", links keyed from entry 1\n"), "\(out)")
            let words = out.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
            if let entries = Int(words[3]), let through = words.firstIndex(of: "through"),
                let anchored = Int(words[through + 2]), anchored == entries
            {
                return anchored
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the audit chain was not anchored to its head within 10 s")
        return 0
    }
}
#endif
