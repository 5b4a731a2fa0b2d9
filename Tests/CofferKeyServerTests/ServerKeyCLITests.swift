#if Server
import Coffer
import Foundation
import Testing

/// `coffer server-key …` and `--kek-server` against a running `coffer-server`.
@Suite struct ServerKeyCLITests {
    static let coffer = ServerProcess.binary.deletingLastPathComponent().appendingPathComponent("coffer")

    /// Runs `coffer` with `arguments`: status, stdout, stderr.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String, String) {
        let run = try Spawned.run(coffer.path, arguments, environment: environment, errors: .capture)
        return (run.status, run.text, run.errorText)
    }

    /// A token file as the CLI wants one: the user's own, closed to others.
    static func secretFile(_ path: String, _ text: String) throws {
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else { throw CofferError(.malformed, "cannot write \(path)") }
    }

    /// A running server with an operator of every scope: the server, the
    /// operator's token file, and a token file for `subject`.
    static func serverWithOperator(_ issuer: Issuer, subject: String, extra: [String] = []) throws -> (
        server: ServerProcess, operatorFile: String, tokenFile: String
    ) {
        let data = issuer.folder + "/data"
        try ServerProcess(issuer: issuer, data: data, extra: extra).stop()
        let operatorFile = issuer.folder + "/operator"
        try secretFile(operatorFile, ServerProcess.addOperator(issuer: issuer, data: data, name: "ops"))
        let server = try ServerProcess(issuer: issuer, data: data, extra: extra)
        let tokenFile = issuer.folder + "/token"
        try secretFile(tokenFile, try issuer.token(subject) + "\n")
        return (server, operatorFile, tokenFile)
    }

    @Test func getRotateRetireShredAndAKeyRingUnlockedByTheServer() async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        try ServerProcess(issuer: issuer, data: data).stop()
        let operatorFile = issuer.folder + "/operator"
        try Self.secretFile(operatorFile, ServerProcess.addOperator(issuer: issuer, data: data, name: "ops"))
        let server = try ServerProcess(issuer: issuer, data: data)
        defer { server.stop() }
        let tokenFile = issuer.folder + "/token"
        try Self.secretFile(tokenFile, try issuer.token("cli-user") + "\n")
        let user = ["--server", server.url, "--token-file", tokenFile]
        let admin = ["--server", server.url, "--operator-token-file", operatorFile, "--subject", "cli-user"]

        var (status, out, err) = try Self.run(["server-key", "get", "--purpose", "notes"] + user)
        #expect(status == 0, "\(err)")
        #expect(out.hasPrefix("purpose notes, version 1, key id "))
        // --reveal writes the key the server releases, and never over a file.
        let keyFile = issuer.folder + "/notes.key"
        (status, _, err) = try Self.run(["server-key", "get", "--purpose", "notes", "--reveal", "-o", keyFile] + user)
        #expect(status == 0, "\(err)")
        let released = try await server.address.request("/v1/keys/notes", token: try issuer.token("cli-user")).1
        #expect(try Data(contentsOf: URL(fileURLWithPath: keyFile)).base64EncodedString() == released["key"] as? String)
        (status, _, _) = try Self.run(["server-key", "get", "--purpose", "notes", "--reveal", "-o", keyFile] + user)
        #expect(status == 6)
        (status, _, _) = try Self.run(["server-key", "get", "--purpose", "notes", "--reveal"] + user)
        #expect(status == 64)

        (status, out, err) = try Self.run(["server-key", "rotate", "--purpose", "notes"] + admin)
        #expect(status == 0 && out.hasPrefix("purpose notes, version 2"), "\(err)")
        (status, _, err) = try Self.run(
            ["server-key", "retire", "--purpose", "notes", "--minimum-version", "2"] + admin)
        #expect(status == 0, "\(err)")
        (status, _, err) = try Self.run(["server-key", "get", "--purpose", "notes", "--key-version", "1"] + user)
        #expect(status == 6 && err.contains("key-retired"), "\(err)")
        (status, out, _) = try Self.run(["server-key", "get", "--purpose", "notes", "--json"] + user)
        #expect(out.contains(#""version":2"#))

        // A key ring whose KEK is the server's key for "rings".
        let ring = issuer.folder + "/app.ckr"
        let kek = ["--keyring", ring, "--kek-server", server.url, "--purpose", "rings", "--token-file", tokenFile]
        (status, _, err) = try Self.run(["keyring", "new"] + kek)
        #expect(status == 0, "\(err)")
        (status, _, err) = try Self.run(["keyring", "list"] + kek)
        #expect(status == 0, "\(err)")
        var other = kek
        other[5] = "photos"
        (status, _, _) = try Self.run(["keyring", "list"] + other)
        #expect(status == 2)

        // Shred, refused while pending, undone.
        (status, out, err) = try Self.run(["server-key", "shred", "--undo-window", "3600"] + admin)
        #expect(status == 0 && out.hasPrefix("shred at "), "\(err)")
        (status, _, err) = try Self.run(["keyring", "list"] + kek)
        #expect(status == 6 && err.contains("shred-pending"), "\(err)")
        (status, _, err) = try Self.run(["server-key", "undo-shred"] + admin)
        #expect(status == 0, "\(err)")
        (status, _, _) = try Self.run(["keyring", "list"] + kek)
        #expect(status == 0)

        // An expired token, a user token used as an operator's, a server that is not there.
        let expiredFile = issuer.folder + "/expired"
        try Self.secretFile(expiredFile, try issuer.token("cli-user", ["exp": Int(Date().timeIntervalSince1970) - 600]))
        (status, _, err) = try Self.run(
            ["server-key", "get", "--purpose", "notes", "--server", server.url, "--token-file", expiredFile])
        #expect(status == 2 && err.contains("token-expired") && err.contains("hint: sign in again"), "\(err)")
        (status, _, _) = try Self.run(
            [
                "server-key", "rotate", "--purpose", "notes", "--server", server.url, "--operator-token-file",
                tokenFile,
                "--subject", "cli-user",
            ])
        #expect(status == 2)
        (status, _, _) = try Self.run(["keyring", "list", "--keyring", ring, "--kek-server", server.url])
        #expect(status == 64)
    }

    @Test func theServerTourRunsAgainstADevelopmentServerItStartsItself() throws {
        let (status, out, err) = try Self.run(["tour", "server"])
        #expect(status == 0, "\(err)")
        for line in [
            "✓ the server made alice's key for presents on her first request",
            "✓ the app started again, fetched the same key and opened it",
            "✓ bob signed in: his key for presents is his own, and alice's key ring does not open with it",
        ] {
            #expect(out.contains(line), "\(out)")
        }
    }

    /// `server-key get --dpop-keychain`: the device key made in a file
    /// keychain on first use and kept, a proof with every request; a realm
    /// that requires DPoP refuses the same command without it.
    @Test func theCLIProvesItsDeviceWithAKeyInAKeychain() async throws {
        let issuer = try Issuer()
        let local = try ServerProcess(issuer: issuer, data: issuer.folder + "/data", extra: ["--require-dpop"])
        defer { local.stop() }
        let tokenFile = issuer.folder + "/token"
        try Self.secretFile(tokenFile, try issuer.token("dee") + "\n")
        let passphrase = issuer.folder + "/kcpw"
        try Self.secretFile(passphrase, "keychain passphrase\n")
        let environment = ["COFFER_KEYCHAIN_DIR": issuer.folder + "/keychains"]
        var (status, _, err) = try Self.run(
            ["keychain", "create", "--keychain", "device", "--passphrase-file", passphrase], environment: environment)
        #expect(status == 0, "\(err)")
        let get = ["server-key", "get", "--purpose", "notes", "--server", local.url, "--token-file", tokenFile]
        let dpop = ["--dpop-keychain", "device", "--dpop-keychain-passphrase-file", passphrase]
        var out: String
        (status, out, err) = try Self.run(get + dpop, environment: environment)
        #expect(status == 0 && out.contains("device jkt:"), "\(err)")
        let (_, again, _) = try Self.run(get + dpop, environment: environment)
        #expect(again == out)
        (status, _, err) = try Self.run(get, environment: environment)
        #expect(status != 0 && err.contains("dpop-required"), "\(err)")
        (status, _, err) = try Self.run(get + ["--dpop-keychain-key-file", passphrase], environment: environment)
        #expect(status == 64, "\(err)")
    }

    @Test func onlyADevelopmentServerMintsTokens() async throws {
        let issuer = try Issuer()
        let server = try ServerProcess(issuer: issuer, data: issuer.folder + "/data")
        defer { server.stop() }
        let (status, body) = try await server.address.request(
            "/v1/dev/token", token: "-", body: try JSONSerialization.data(withJSONObject: ["subject": "x"]))
        #expect(status == 404 && body["code"] as? String == "not-found")
        // And --dev refuses any address but loopback.
        #expect(throws: (any Error).self) {
            try ServerProcess(arguments: ["serve", "--dev", "--listen", "0.0.0.0:0", "--data", issuer.folder + "/dev"])
        }
    }
}
#endif
