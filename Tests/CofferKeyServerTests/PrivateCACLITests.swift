#if Server
import Coffer
import Foundation
import Testing

/// The CLI against a key server whose certificate a private CA issued
/// (operator trial 4, friction 4): `--ca-file`, `--kek-server-ca-file` and
/// `--anchor-ca-file` trust that CA's certificates, without them the
/// system's roots refuse the server and the hint says what to give, and a
/// CA other than the issuer's is refused too.
@Suite struct PrivateCACLITests {
    /// A CA, and a certificate for 127.0.0.1 that it signed, made by openssl.
    static func privateCA(in folder: String, name: String) throws -> (ca: String, cert: String, key: String) {
        let (ca, caKey) = (folder + "/\(name)-ca.pem", folder + "/\(name)-ca-key.pem")
        let (csr, cert, key) = (folder + "/\(name).csr", folder + "/\(name).pem", folder + "/\(name)-key.pem")
        let extensions = folder + "/\(name).ext"
        try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\n".utf8).write(to: URL(fileURLWithPath: extensions))
        let steps: [[String]] = [
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                "/CN=Coffer test CA \(name)", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                "keyUsage=critical,keyCertSign", "-keyout", caKey, "-out", ca,
            ],
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
                "-keyout", key, "-out", csr,
            ],
            [
                "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-days", "1", "-extfile",
                extensions, "-out", cert,
            ],
        ]
        for step in steps {
            let run = try Spawned.run("/usr/bin/env", ["openssl"] + step, output: .discard, errors: .discard)
            guard run.status == 0 else { throw CofferError(.malformed, "openssl \(step[0]) failed") }
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key)
        return (ca, cert, key)
    }

    @Test func theCLITrustsAPrivateCAWhenToldAndOnlyThen() throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let (ca, cert, key) = try Self.privateCA(in: issuer.folder, name: "server")
        let (otherCA, _, _) = try Self.privateCA(in: issuer.folder, name: "other")
        let tls = ["--tls-cert", cert, "--tls-key", key]
        try ServerProcess(issuer: issuer, data: data, extra: tls).stop()
        let operatorFile = issuer.folder + "/operator"
        try ServerKeyCLITests.secretFile(
            operatorFile,
            ServerProcess.addOperator(
                issuer: issuer, data: data, name: "ops", extra: ["--scope", "keys:rotate", "--scope", "stores:anchor"]))
        let server = try ServerProcess(issuer: issuer, data: data, extra: tls)
        defer { server.stop() }
        #expect(server.url.hasPrefix("https://127.0.0.1:"))
        let tokenFile = issuer.folder + "/token"
        try ServerKeyCLITests.secretFile(tokenFile, try issuer.token("ca-user") + "\n")
        let get = ["server-key", "get", "--purpose", "notes", "--server", server.url, "--token-file", tokenFile]

        var (status, out, err) = try ServerKeyCLITests.run(get + ["--ca-file", ca])
        #expect(status == 0 && out.hasPrefix("purpose notes, version 1, key id "), "\(err)")
        // Without the CA, the system's roots refuse the server, and the hint names the option.
        (status, _, err) = try ServerKeyCLITests.run(get)
        #expect(status == 1 && err.contains("unreachable") && err.contains("--ca-file"), "\(status) \(err)")
        // Another CA is not the issuer's.
        (status, _, err) = try ServerKeyCLITests.run(get + ["--ca-file", otherCA])
        #expect(status == 1 && err.contains("unreachable"), "\(status) \(err)")
        // A file that holds no certificate is the caller's mistake.
        (status, _, err) = try ServerKeyCLITests.run(get + ["--ca-file", tokenFile])
        #expect(status == 64 && err.contains("holds no certificate in PEM"), "\(status) \(err)")
        (status, _, err) = try ServerKeyCLITests.run(get + ["--ca-file", issuer.folder + "/missing.pem"])
        #expect(status != 0 && err.contains("missing.pem"), "\(status) \(err)")

        // An operator's call.
        let admin = [
            "server-key", "rotate", "--purpose", "notes", "--server", server.url, "--operator-token-file",
            operatorFile, "--subject", "ca-user",
        ]
        (status, out, err) = try ServerKeyCLITests.run(admin + ["--ca-file", ca])
        #expect(status == 0 && out.hasPrefix("purpose notes, version 2"), "\(err)")
        (status, _, _) = try ServerKeyCLITests.run(admin)
        #expect(status == 1)

        // A key ring whose KEK is the server's key.
        let ring = issuer.folder + "/app.ckr"
        let kek = ["--keyring", ring, "--kek-server", server.url, "--purpose", "rings", "--token-file", tokenFile]
        (status, _, err) = try ServerKeyCLITests.run(["keyring", "new"] + kek)
        #expect(status == 1 && err.contains("--kek-server-ca-file"), "\(status) \(err)")
        (status, _, err) = try ServerKeyCLITests.run(["keyring", "new"] + kek + ["--kek-server-ca-file", ca])
        #expect(status == 0, "\(err)")
        (status, out, err) = try ServerKeyCLITests.run(["keyring", "list"] + kek + ["--kek-server-ca-file", ca])
        #expect(status == 0 && !out.isEmpty, "\(err)")
        (status, _, err) = try ServerKeyCLITests.run(["keyring", "list", "--keyring", ring, "--kek-server-ca-file", ca])
        #expect(status == 64 && err.contains("--kek-server-ca-file goes with --kek-server"), "\(status) \(err)")

        // A store anchored at the server.
        let state = issuer.folder + "/state"
        try FileManager.default.createDirectory(
            atPath: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Data(StoreAnchorFleetTests.schema.utf8).write(to: URL(fileURLWithPath: issuer.folder + "/schema.json"))
        let store = [
            "--db", issuer.folder + "/notes.sqlite", "--kek-server", server.url, "--purpose", "stores", "--token-file",
            tokenFile, "--kek-server-ca-file", ca, "--anchor-server", server.url, "--anchor-token-file", operatorFile,
        ]
        let environment = ["COFFER_STATE_DIR": state]
        let initialize = ["store", "init", "--schema", issuer.folder + "/schema.json"] + store
        (status, _, err) = try ServerKeyCLITests.run(initialize, environment: environment)
        #expect(status == 1 && err.contains("unreachable"), "without --anchor-ca-file: \(status) \(err)")
        (status, _, err) = try ServerKeyCLITests.run(initialize + ["--anchor-ca-file", ca], environment: environment)
        #expect(status == 0, "\(err)")
        (status, out, err) = try ServerKeyCLITests.run(
            ["store", "anchor", "status"] + store,
            environment: environment.merging(["COFFER_ANCHOR_CA_FILE": ca]) { $1 })
        #expect(status == 0 && out.contains("anchor    https://127.0.0.1"), "\(status) \(out) \(err)")
    }
}
#endif
