#if Server
import Coffer
import Foundation
import Testing

/// SIGHUP (issue 59, part 5): a running coffer-server reloads its log
/// level from the settings file and the issuer's key set, says what it
/// reloaded, and keeps serving.
@Suite struct ReloadTests {
    static func write(_ settings: [String: Any], to path: String) throws {
        try JSONSerialization.data(withJSONObject: settings).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }

    static func waitFor(_ text: String, in log: String, after offset: Int = 0) async throws -> Bool {
        for _ in 0..<100 {
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if said.dropFirst(offset).contains(text) { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    @Test func sighupReloadsTheLogLevelAndTheIssuersKeys() async throws {
        let issuer = try Issuer()
        let config = issuer.folder + "/server.json"
        let log = issuer.folder + "/server.log"
        var settings: [String: Any] = [
            "listen": "127.0.0.1:0", "data": issuer.folder + "/data", "issuer": Issuer.name,
            "audience": Issuer.audience, "jwks": ["file": issuer.folder + "/jwks.json"],
            "kek": ["passphrase": ["file": try ServerProcess.passphraseFile(issuer)]], "log-level": "info",
        ]
        try Self.write(settings, to: config)
        let server = try ServerProcess(arguments: ["serve", "--config", config], log: log)
        defer { server.stop() }
        let token = try issuer.token("ana")
        #expect(try await server.address.request("/v1/keys/notes", token: token).0 == 200)
        #expect(try await Self.waitFor("POST /v1/keys/{purpose} 200", in: log))

        // The level from the file, and the issuer's set without the key
        // that signed the token: both take effect at SIGHUP, not before.
        settings["log-level"] = "warning"
        try Self.write(settings, to: config)
        let jwks = issuer.folder + "/jwks.json"
        let set = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: jwks))) as! [String: Any]
        let keys = (set["keys"] as! [[String: Any]]).filter { $0["kid"] as? String != "es" }
        #expect(keys.count == 2)
        try JSONSerialization.data(withJSONObject: ["keys": keys]).write(to: URL(fileURLWithPath: jwks))
        #expect(try await server.address.request("/v1/keys/notes", token: token).0 == 200)

        kill(server.process.processIdentifier, SIGHUP)
        #expect(
            try await Self.waitFor("SIGHUP: reloaded log level warning and the issuer's key set (2 keys)", in: log),
            "\(String(((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").suffix(1500)))")
        let before = try String(contentsOfFile: log, encoding: .utf8).utf8.count
        let (status, body) = try await server.address.request("/v1/keys/notes", token: token)
        #expect(status == 401 && body["code"] as? String == "token-key-unknown", "\(status) \(body)")
        // At warning, the request's info line is not written.
        try await Task.sleep(for: .milliseconds(300))
        let after = try String(contentsOfFile: log, encoding: .utf8)
        let since = String(decoding: Array(after.utf8.dropFirst(before)), as: UTF8.self)
        #expect(!since.contains("POST /v1/keys/{purpose} 401"), "\(since)")
        #expect(server.process.isRunning)
    }
}
#endif
