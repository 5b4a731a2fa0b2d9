#if Server
import Foundation
import Testing

/// Operator trial 4: a replica with its own KEK and database served a user
/// other key bytes under the same key id, since the id named only the key's
/// name and version. Now the id commits to the key: checked here against
/// Python's hmac module, and two such servers give different ids.
@Suite struct KeyIDTests {
    @Test func theKeyIDCommitsToTheKey() async throws {
        let issuer = try Issuer()
        let token = try issuer.token("kim")
        var answers: [(key: String, id: String)] = []
        for folder in ["/one", "/split"] {
            let server = try ServerProcess(issuer: issuer, data: issuer.folder + folder)
            defer { server.stop() }
            let (status, body) = try await server.address.request("/v1/keys/notes", token: token)
            #expect(status == 200)
            answers.append((try #require(body["key"] as? String), try #require(body["keyId"] as? String)))
        }
        #expect(answers[0].key != answers[1].key && answers[0].id != answers[1].id)
        let script = """
            import base64, hashlib, hmac, sys
            for line in sys.stdin.read().split():
                key = base64.b64decode(line)
                print(hmac.new(key, b"coffer key server key id v2", hashlib.sha256).hexdigest()[:16])
            """
        let run = try Spawned.run(
            "/usr/bin/python3", ["-c", script], input: Data(answers.map(\.key).joined(separator: "\n").utf8))
        #expect(run.text.split(separator: "\n").map(String.init) == answers.map(\.id))
    }
}
#endif
