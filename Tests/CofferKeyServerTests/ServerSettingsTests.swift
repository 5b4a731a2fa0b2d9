#if Server
import Coffer
import Crypto
import Foundation
import Testing

/// `coffer-server serve --config FILE`, with COFFER_SERVER_* variables and
/// flags on top (swift-configuration).
@Suite struct ServerSettingsTests {
    /// Whether the server's SQLite database holds `subject`'s key in `realm` (read with sqlite3).
    static func hasKey(_ data: String, realm: String, subject: String) throws -> Bool {
        let query = "SELECT count(*) FROM keys WHERE realm = '\(realm)' AND subject = '\(subject)'"
        return try Spawned.run("/usr/bin/sqlite3", [data + "/keys.sqlite", query]).text
            .trimmingCharacters(in: .whitespacesAndNewlines) == "1"
    }

    @Test func aConfigurationFileTheEnvironmentAndFlagsInThatOrderOfStrength() async throws {
        let issuer = try Issuer()
        let config = issuer.folder + "/server.json"
        let settings: [String: Any] = [
            "listen": "127.0.0.1:0", "data": issuer.folder + "/data", "issuer": Issuer.name,
            "audience": Issuer.audience, "jwks": ["file": issuer.folder + "/jwks.json"],
            "kek": ["passphrase": ["file": try ServerProcess.passphraseFile(issuer)]], "realm": "from-file",
        ]
        try JSONSerialization.data(withJSONObject: settings).write(to: URL(fileURLWithPath: config))
        let token = try issuer.token("settled")
        for (environment, flags, realm) in [
            ([String: String](), [String](), "from-file"),
            (["COFFER_SERVER_REALM": "from-env"], [], "from-env"),
            (["COFFER_SERVER_REALM": "from-env"], ["--realm", "from-flag"], "from-flag"),
        ] {
            let server = try ServerProcess(
                arguments: ["serve", "--config", config] + flags, environment: environment)
            defer { server.stop() }
            let (status, body) = try await server.address.request("/v1/keys/notes", token: token)
            #expect(status == 200)
            #expect(body["keyId"] as? String != nil)
            #expect(try Self.hasKey(issuer.folder + "/data", realm: realm, subject: "settled"), "\(realm)")
        }
        // A setting missing everywhere is named with all three of its spellings.
        var partial = settings
        partial["issuer"] = nil
        try JSONSerialization.data(withJSONObject: partial).write(to: URL(fileURLWithPath: config))
        let (status, said) = try serverRefusal(["serve", "--config", config])
        #expect(status != 0)
        #expect(
            said.contains("--issuer") && said.contains("COFFER_SERVER_ISSUER") && said.contains("\"issuer\""), "\(said)"
        )
        try Data("not json".utf8).write(to: URL(fileURLWithPath: config))
        #expect(throws: (any Error).self) { try ServerProcess(arguments: ["serve", "--config", config]) }
    }
}

/// The KEK ring unlocked by a key kept in a file keychain.
@Suite struct KeychainKEKTests {
    /// A rate limit that is not N/SECONDS stops the server before it serves,
    /// from a flag or from the configuration file, and says why.
    @Test func aBadRateLimitIsRefusedAtStart() throws {
        let issuer = try Issuer()
        let config = issuer.folder + "/limits.json"
        try JSONSerialization.data(withJSONObject: ["address-rate-limit": "10 per minute"])
            .write(to: URL(fileURLWithPath: config))
        for (flags, named) in [
            (["--rate-limit", "5/x"], "--rate-limit"), (["--rate-limit", "0/60"], "--rate-limit"),
            (["--config", config], "--address-rate-limit"),
        ] {
            let (status, said) = try serverRefusal(["serve", "--dev", "--data", issuer.folder + "/dev"] + flags)
            #expect(status == 64, "\(flags): \(said)")
            #expect(said.contains(named) && said.contains("N/SECONDS"), "\(said)")
        }
    }

    @Test func theKEKRingOpensWithAKeyFromAFileKeychainAndOnlyWithIt() async throws {
        let issuer = try Issuer()
        let keychainPassphrase = issuer.folder + "/keychain-passphrase"
        #expect(
            FileManager.default.createFile(
                atPath: keychainPassphrase, contents: Data("the keychain's passphrase\n".utf8),
                attributes: [.posixPermissions: 0o600]))
        let base = [
            "serve", "--listen", "127.0.0.1:0", "--data", issuer.folder + "/data", "--issuer", Issuer.name,
            "--audience", Issuer.audience, "--jwks-file", issuer.folder + "/jwks.json",
        ]
        let kek = [
            "--kek-keychain", issuer.folder + "/data/server.keychain", "--kek-tag", "coffer-server-kek",
            "--kek-keychain-passphrase-file", keychainPassphrase,
        ]
        let token = try issuer.token("kept")
        var keys: [String] = []
        for _ in 0..<2 {
            let server = try ServerProcess(arguments: base + kek)
            let (status, body) = try await server.address.request("/v1/keys/notes", token: token)
            server.stop()
            #expect(status == 200)
            keys.append(body["key"] as? String ?? "")
        }
        #expect(keys[0] == keys[1] && !keys[0].isEmpty)
        // Another tag is another key: the ring does not open, the server does not start.
        var otherTag = kek
        otherTag[3] = "another-kek"
        #expect(throws: (any Error).self) { try ServerProcess(arguments: base + otherTag) }
        // A passphrase file and a keychain at once is refused.
        #expect(throws: (any Error).self) {
            try ServerProcess(arguments: base + kek + ["--kek-passphrase-file", keychainPassphrase])
        }
    }
}

/// Runs coffer-server with `arguments` until it exits: status and stderr.
func serverRefusal(_ arguments: [String]) throws -> (Int32, String) {
    let run = try Spawned.run(ServerProcess.binary.path, arguments, output: .discard, errors: .capture)
    return (run.status, run.errorText)
}
#endif
