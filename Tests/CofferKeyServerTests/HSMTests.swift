#if Server
import Coffer
import Foundation
import Testing

/// A SoftHSM2 token of the test's own (its token folder and configuration
/// in the test's folder, SOFTHSM2_CONF pointing there), initialized by
/// SoftHSM2's own tool. In CI a missing SoftHSM2 is a failure.
struct SoftHSM {
    static let module =
        ProcessInfo.processInfo.environment["COFFER_PKCS11_MODULE"] ?? "/usr/lib/softhsm/libsofthsm2.so"
    static let token = "coffer"
    let folder: String
    let pinFile: String
    var tokens: String { folder + "/tokens" }
    var environment: [String: String] { ["SOFTHSM2_CONF": folder + "/softhsm2.conf"] }

    init(in parent: String) throws {
        folder = parent + "/hsm"
        try FileManager.default.createDirectory(atPath: folder + "/tokens", withIntermediateDirectories: true)
        try "directories.tokendir = \(folder)/tokens\nobjectstore.backend = file\nlog.level = ERROR\n".write(
            toFile: folder + "/softhsm2.conf", atomically: true, encoding: .utf8)
        let made = try Spawned.run(
            "/usr/bin/env",
            ["softhsm2-util", "--init-token", "--free", "--label", Self.token, "--pin", "1234", "--so-pin", "5678"],
            environment: ["SOFTHSM2_CONF": folder + "/softhsm2.conf"], errors: .capture, mergeErrors: true)
        guard made.status == 0 else { throw CofferError(.io, "softhsm2-util --init-token failed: \(made.text)") }
        pinFile = try Self.secretFile(folder + "/pin", "1234\n")
    }

    static func secretFile(_ path: String, _ text: String) throws -> String {
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else { throw CofferError(.io, "cannot write \(path)") }
        return path
    }

    /// The options that put the KEK ring's root in this token.
    func options(key: String = "coffer-kek", pinFile: String? = nil) -> [String] {
        [
            "--kek-pkcs11-module", Self.module, "--kek-pkcs11-token", Self.token, "--kek-pkcs11-key", key,
            "--kek-pkcs11-pin-file", pinFile ?? self.pinFile,
        ]
    }

    /// python-pkcs11's view of the key and the ring (Peers/pkcs11_peer.py).
    func independentCheck(key: String, ring: String) throws -> [String: Any] {
        let run = try Spawned.run(
            Issuer.root + "/.venv/bin/python",
            [
                Issuer.root + "/Tests/CofferKeyServerTests/Peers/pkcs11_peer.py", Self.module, Self.token, pinFile, key,
                ring,
            ], environment: environment, errors: .capture)
        guard run.status == 0, let object = try JSONSerialization.jsonObject(with: run.output) as? [String: Any] else {
            throw CofferError(.io, "pkcs11_peer.py failed: \(run.text) \(run.errorText)")
        }
        return object
    }
}

/// The KEK ring sealed by an AES key inside a PKCS#11 token (issue 59,
/// part 1), with SoftHSM2 as the token and python-pkcs11 as the check
/// from outside.
@Suite struct HSMTests {
    static let users = ["ana", "bo"]

    static func server(_ arguments: [String], _ environment: [String: String]) throws -> (Int32, String) {
        let run = try Spawned.run(
            ServerProcess.binary.path, arguments, environment: environment, output: .capture, errors: .capture)
        return (run.status, run.text + run.errorText)
    }

    static func serve(_ issuer: Issuer, _ data: String, _ hsm: SoftHSM, key: String = "coffer-kek", log: String)
        throws -> ServerProcess
    {
        let arguments =
            [
                "serve", "--listen", "127.0.0.1:0", "--data", data, "--issuer", Issuer.name, "--audience",
                Issuer.audience, "--jwks-file", issuer.folder + "/jwks.json",
            ] + hsm.options(key: key)
        do {
            return try ServerProcess(arguments: arguments, environment: hsm.environment, log: log)
        } catch {
            throw CofferError(
                .io, "coffer-server did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
    }

    static func keys(_ server: ServerProcess, _ issuer: Issuer, _ users: [String] = users) async throws -> [String:
        String]
    {
        var keys: [String: String] = [:]
        for user in users {
            let (status, body) = try await server.address.request("/v1/keys/notes", token: try issuer.token(user))
            keys[user] = status == 200 ? body["key"] as? String : "status \(status) \(body["code"] ?? "")"
        }
        return keys
    }

    @Test func aServerWhoseKEKIsInATokenServesSurvivesKill9AndRefusesAWrongPIN() async throws {
        let issuer = try Issuer()
        let hsm = try SoftHSM(in: issuer.folder)
        let data = issuer.folder + "/data"
        var run = try Self.server(["kek", "init", "--data", data] + hsm.options(), hsm.environment)
        #expect(run.0 == 0, "\(run.1)")

        // Outside Coffer: the key is in the token, sensitive and never
        // extractable, and it opens the ring's slot, whose data key opens the ring.
        let seen = try hsm.independentCheck(key: "coffer-kek", ring: data + "/kek.ckr")
        #expect(seen["token"] as? Bool == true && seen["keyType"] as? String == "AES" && seen["bytes"] as? Int == 32)
        #expect(seen["sensitive"] as? Bool == true && seen["extractable"] as? Bool == false)
        #expect(seen["alwaysSensitive"] as? Bool == true && seen["neverExtractable"] as? Bool == true)
        #expect(seen["valueReadable"] as? Bool == false)
        #expect((seen["ringBody"] as? Int ?? 0) > 0, "\(seen)")

        let server = try Self.serve(issuer, data, hsm, log: issuer.folder + "/server.log")
        let before = try await Self.keys(server, issuer)
        #expect(before.values.allSatisfy { !$0.hasPrefix("status") }, "\(before)")
        server.kill9()
        let again = try Self.serve(issuer, data, hsm, log: issuer.folder + "/server-2.log")
        #expect(try await Self.keys(again, issuer) == before)
        again.stop()

        // A wrong PIN, a missing key and a missing token are each said plainly.
        let wrongPIN = try SoftHSM.secretFile(issuer.folder + "/wrong-pin", "4321\n")
        run = try Self.server(["kek", "list", "--data", data] + hsm.options(pinFile: wrongPIN), hsm.environment)
        #expect(run.0 != 0 && run.1.contains("the PIN for PKCS#11 token coffer is wrong"), "\(run.1)")
        run = try Self.server(["kek", "list", "--data", data] + hsm.options(key: "no-such-key"), hsm.environment)
        #expect(run.0 != 0 && run.1.contains("holds no AES key labelled no-such-key"), "\(run.1)")
        var options = hsm.options()
        options[3] = "no-such-token"
        run = try Self.server(["kek", "list", "--data", data] + options, hsm.environment)
        #expect(run.0 != 0 && run.1.contains("no PKCS#11 token labelled no-such-token"), "\(run.1)")
        // The PIN never appears in what the server says.
        let log = try String(contentsOfFile: issuer.folder + "/server.log", encoding: .utf8)
        #expect(!log.contains("1234") && !run.1.contains("1234"))
    }

    @Test func aTokenThatGoesAwayIs503AndTheServerRecoversWhenItIsBack() async throws {
        let issuer = try Issuer()
        let hsm = try SoftHSM(in: issuer.folder)
        let data = issuer.folder + "/data"
        let log = issuer.folder + "/server.log"
        let server = try Self.serve(issuer, data, hsm, log: log)
        defer { server.stop() }
        let first = try await Self.keys(server, issuer, ["ana"])
        #expect(first["ana"]?.hasPrefix("status") == false, "\(first)")

        // The token's files moved away: a key that needs the KEK is 503
        // within the check's 5 seconds (and a margin). Each try asks for a
        // new user's key: one opened in the last minute is still answered.
        try FileManager.default.moveItem(atPath: hsm.tokens, toPath: hsm.folder + "/away")
        var answer = ""
        for attempt in 0..<40 {
            answer = try await Self.keys(server, issuer, ["away\(attempt)"])["away\(attempt)"] ?? ""
            if answer.hasPrefix("status 503") { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(answer == "status 503 kek-unavailable", "\(answer)")

        // Back: the server answers again, without a restart.
        try FileManager.default.moveItem(atPath: hsm.folder + "/away", toPath: hsm.tokens)
        for attempt in 0..<40 {
            answer = try await Self.keys(server, issuer, ["back\(attempt)"])["back\(attempt)"] ?? ""
            if !answer.hasPrefix("status") { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(!answer.hasPrefix("status"), "\(answer)")
        #expect(try await Self.keys(server, issuer, ["ana"]) == first)
        let said = try String(contentsOfFile: log, encoding: .utf8)
        #expect(said.contains("the KEK's holder does not answer") && said.contains("the KEK's holder answers again"))
    }

    @Test func aPassphraseRingMovesToTheTokenAndToAnotherKeyResumably() async throws {
        let issuer = try Issuer()
        let hsm = try SoftHSM(in: issuer.folder)
        let data = issuer.folder + "/data"
        let passphrase = ["--data", data, "--kek-passphrase-file", try ServerProcess.passphraseFile(issuer)]
        var run = try Self.server(["kek", "init"] + passphrase, [:])
        #expect(run.0 == 0, "\(run.1)")
        let server = try ServerProcess(
            issuer: issuer, data: data, log: issuer.folder + "/before.log")
        let before = try await Self.keys(server, issuer)
        server.stop()

        let toHSM = [
            "--to-pkcs11-key", "coffer-kek", "--to-pkcs11-module", SoftHSM.module, "--to-pkcs11-token", SoftHSM.token,
            "--to-pkcs11-pin-file", hsm.pinFile,
        ]
        run = try Self.server(["kek", "reseal"] + passphrase + toHSM, hsm.environment)
        #expect(run.0 == 0 && run.1.contains("is sealed under the HSM key coffer-kek"), "\(run.1)")
        // Run again (as after a kill): it is done, and says so.
        run = try Self.server(["kek", "reseal"] + passphrase + toHSM, hsm.environment)
        #expect(run.0 == 0 && run.1.contains("already sealed"), "\(run.1)")
        // The passphrase no longer opens it.
        run = try Self.server(["kek", "list"] + passphrase, [:])
        #expect(run.0 != 0, "\(run.1)")

        // From one HSM key to a new one.
        run = try Self.server(
            ["kek", "reseal", "--data", data] + hsm.options() + ["--to-pkcs11-key", "coffer-kek-2"], hsm.environment)
        #expect(run.0 == 0 && run.1.contains("coffer-kek-2"), "\(run.1)")
        let seen = try hsm.independentCheck(key: "coffer-kek-2", ring: data + "/kek.ckr")
        #expect(seen["extractable"] as? Bool == false && (seen["ringBody"] as? Int ?? 0) > 0, "\(seen)")

        // Served under the new key: every user's key as before.
        let after = try Self.serve(issuer, data, hsm, key: "coffer-kek-2", log: issuer.folder + "/after.log")
        defer { after.stop() }
        #expect(try await Self.keys(after, issuer) == before)
    }
}
#endif
