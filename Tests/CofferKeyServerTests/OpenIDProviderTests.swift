#if Server
import AsyncHTTPClient
import Coffer
import CofferKeyClient
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Testing

/// A real OpenID provider that no test here wrote (django-oidc-provider,
/// started by scripts/oidc-provider.py), found by discovery alone: a user
/// signs in through its token endpoint and fetches her key with the ID
/// token it issued; its key rotation is picked up.
@Suite(.serialized) struct OpenIDProviderTests {
    /// The provider process, on a loopback port it picks.
    final class Provider {
        let process = Process()
        let folder: String
        private(set) var issuer = ""
        let output = Pipe()

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("oidc-\(UUID().uuidString)").path
            let python = Issuer.root + "/.venv/bin/python"
            guard FileManager.default.isExecutableFile(atPath: python) else {
                throw CofferError(.io, "no .venv: scripts/test installs Django and django-oidc-provider into it")
            }
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = [Issuer.root + "/scripts/oidc-provider.py", folder]
            process.standardOutput = output
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: folder + "/provider.log", contents: nil)
            process.standardError = FileHandle(forWritingAtPath: folder + "/provider.log")
            try process.run()
            let line = try self.line()
            guard line.hasPrefix("issuer ") else {
                throw CofferError(.malformed, "oidc-provider.py said \(line) (see \(folder)/provider.log)")
            }
            issuer = String(line.dropFirst("issuer ".count))
        }

        /// One line of the provider's standard output (it writes only a
        /// few, each flushed), within 60 seconds: a provider that says
        /// nothing fails the test instead of hanging it.
        func line() throws -> String {
            let done = DispatchSemaphore(value: 0)
            let result = Locked<Result<String, any Error>>(.failure(CofferError(.io, "no line")))
            let handle = output.fileHandleForReading
            Thread.detachNewThread {
                var bytes = Data()
                do {
                    while !bytes.contains(UInt8(ascii: "\n")) {
                        let chunk = try handle.read(upToCount: 1) ?? Data()
                        guard !chunk.isEmpty else { throw CofferError(.malformed, "oidc-provider.py stopped") }
                        bytes += chunk
                    }
                    result.withLock { $0 = .success(String(decoding: bytes.dropLast(), as: UTF8.self)) }
                } catch {
                    result.withLock { $0 = .failure(error) }
                }
                done.signal()
            }
            guard done.wait(timeout: .now() + 60) == .success else {
                process.terminate()
                throw CofferError(.io, "oidc-provider.py said nothing for 60 s (see \(folder)/provider.log)")
            }
            return try result.withLock { $0 }.get()
        }

        func secret(_ name: String) throws -> String {
            try String(contentsOfFile: folder + "/" + name, encoding: .utf8).trimmingCharacters(in: .newlines)
        }

        /// Signs alice in through the provider's token endpoint (the
        /// resource owner password grant): the ID token it issues.
        func signIn(password: String? = nil) async throws -> (status: Int, idToken: String?) {
            var form = URLComponents()
            form.queryItems = [
                .init(name: "grant_type", value: "password"), .init(name: "username", value: "alice"),
                .init(name: "password", value: try password ?? secret("alice-password")),
                .init(name: "client_id", value: "coffer-key-server"),
                .init(name: "client_secret", value: try secret("client-secret")), .init(name: "scope", value: "openid"),
            ]
            var request = HTTPClientRequest(url: issuer + "/token")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(
                ByteBuffer(string: form.percentEncodedQuery!.replacingOccurrences(of: "+", with: "%2B")))
            let response = try await KeyClientTests.http.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 20)
            let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            return (Int(response.status.code), object?["id_token"] as? String)
        }

        /// SIGHUP: a new signing key; returns once the provider says so.
        func rotate() throws -> String {
            kill(process.processIdentifier, SIGHUP)
            let line = try self.line()
            guard line.hasPrefix("rotated ") else { throw CofferError(.malformed, "oidc-provider.py said \(line)") }
            return String(line.dropFirst("rotated ".count))
        }

        /// SIGTERM, then SIGKILL if it is still running 10 s later.
        func stop() {
            process.terminate()
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning {
                Issue.record("oidc-provider.py did not stop on SIGTERM")
                kill(process.processIdentifier, SIGKILL)
            }
            process.waitUntilExit()
        }
    }

    static func header(_ token: String) throws -> [String: Any] {
        let part = String(token.split(separator: ".")[0])
        return try JSONSerialization.jsonObject(with: Data(Base64URL.decode(part)!)) as! [String: Any]
    }

    @Test func aUserSignedInAtARealProviderFetchesHerKey() async throws {
        let provider: Provider
        do {
            provider = try Provider()
        } catch {
            // In CI the provider must run; elsewhere say why it did not.
            Issue.record("the OpenID provider did not start: \(error)")
            return
        }
        defer { provider.stop() }
        let issuer = try Issuer()
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("oidc-data-\(UUID().uuidString)").path
        let log = provider.folder + "/server.log"
        // Only --issuer: the keys and algorithms come from discovery.
        let server = try ServerProcess(
            arguments: [
                "serve", "--listen", "127.0.0.1:0", "--data", data, "--kek-passphrase-file",
                try ServerProcess.passphraseFile(issuer), "--issuer", provider.issuer, "--audience",
                "coffer-key-server", "--jwks-refresh-floor", "0",
            ], log: log)
        defer { server.stop() }
        let said = try String(contentsOfFile: log, encoding: .utf8)
        #expect(
            said.contains("issuer discovery: keys from \(provider.issuer)/jwks, tokens signed with RS256"), "\(said)")

        let signedIn = try await provider.signIn()
        #expect(signedIn.status == 200)
        let idToken = try #require(signedIn.idToken)
        #expect(try Self.header(idToken)["alg"] as? String == "RS256")
        let client = try KeyServerClient(server: URL(string: server.url)!, account: "alice", token: { idToken })
        let key = try await client.currentKey(purpose: "notes")
        #expect(key.version == 1)

        // The provider refuses a wrong password; the server, a token whose
        // signature was changed.
        #expect(try await provider.signIn(password: "not her password").idToken == nil)
        var forged = Array(idToken.utf8)
        forged[forged.count - 5] = forged[forged.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let (status, problem) = try await server.address.request(
            "/v1/keys/notes", token: String(decoding: forged, as: UTF8.self))
        #expect(status == 401, "\(problem)")

        // The provider rotates its key: a token under the new kid makes the
        // server read the keys again, and the same key comes back.
        let oldKid = try Self.header(idToken)["kid"] as? String
        let newKid = try provider.rotate()
        #expect(newKid != oldKid)
        let rotated = try #require(try await provider.signIn().idToken)
        #expect(try Self.header(rotated)["kid"] as? String == newKid)
        let again = try KeyServerClient(server: URL(string: server.url)!, account: "alice", token: { rotated })
        #expect(try await again.currentKey(purpose: "notes").keyID == key.keyID)
    }

    @Test func discoveryAndKeysFromTheFileAreNotMixed() throws {
        let issuer = try Issuer()
        let arguments = [
            "serve", "--listen", "127.0.0.1:0", "--data", issuer.folder + "/data", "--kek-passphrase-file",
            try ServerProcess.passphraseFile(issuer), "--issuer", Issuer.name, "--audience", Issuer.audience,
            "--issuer-discovery", "--jwks-file", issuer.folder + "/jwks.json",
        ]
        ServerProcess.initialize(arguments)
        let run = try Spawned.run(ServerProcess.binary.path, arguments, output: .discard, errors: .capture)
        let said = run.errorText
        #expect(run.status == 64 && said.contains("--issuer-discovery finds the keys itself"), "\(said)")
    }

    /// Configuration documents an attacker or a broken provider serves.
    @Test func hostileConfigurationsAreRefusedClearly() async throws {
        let documents = Locked<[String: String]>([:])
        let router = Router()
        router.get("/:name/.well-known/openid-configuration") { _, context -> Response in
            let name = try context.parameters.require("name")
            guard let body = documents.withLock({ $0[name] }) else { return Response(status: .notFound) }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: body)))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let base = "http://127.0.0.1:\(client.port!)"
            func document(issuer: String, jwks: String = "http://127.0.0.1:1/jwks", algs: String = #"["RS256"]"#)
                -> String
            {
                #"{"issuer": "\#(issuer)", "jwks_uri": "\#(jwks)", "id_token_signing_alg_values_supported": \#(algs)}"#
            }
            let cases: [(String, String?, String)] = [
                ("good", document(issuer: base + "/good"), ""),
                ("other", document(issuer: "https://evil.example.com"), "not \"\(base)/other\""),
                ("plainjwks", document(issuer: base + "/plainjwks", jwks: "http://keys.example.com/jwks"), "jwks_uri"),
                ("hmac", document(issuer: base + "/hmac", algs: #"["HS256", "none"]"#), "HS256, none"),
                (
                    "noalgs", #"{"issuer": "\#(base)/noalgs", "jwks_uri": "http://127.0.0.1:1/jwks"}"#,
                    "id_token_signing"
                ),
                ("text", "<html>hello</html>", "not a JSON object"),
                ("huge", "[" + String(repeating: "1,", count: 600_000) + "1]", "over 1048576 bytes"),
                ("missing", nil, "answered 404"),
            ]
            for (name, body, _) in cases { documents.withLock { $0[name] = body } }
            for (name, _, words) in cases {
                do {
                    let found = try await IssuerDiscovery.discover(issuer: base + "/" + name, http: KeyClientTests.http)
                    #expect(name == "good", "\(name) was accepted")
                    #expect(found.algorithms == ["RS256"] && found.jwksURI.absoluteString == "http://127.0.0.1:1/jwks")
                } catch let error as CofferError {
                    #expect(name != "good" && error.description.contains(words), "\(name): \(error)")
                }
            }
        }
        for issuer in ["http://accounts.example.com", "https://accounts.example.com?x=1", "not a url"] {
            #expect(throws: CofferError.self, "\(issuer)") { try IssuerDiscovery.configurationURL(issuer: issuer) }
        }
        #expect(
            try IssuerDiscovery.configurationURL(issuer: "https://login.example.com/tenant/")
                == URL(string: "https://login.example.com/tenant/.well-known/openid-configuration"))
        // Discovery narrows the algorithms a token may use.
        let policy = TokenPolicy(issuer: "i", audience: "a", algorithms: ["RS256", "HS256"])
        #expect(policy.algorithms == ["RS256"])
    }
}
#endif
