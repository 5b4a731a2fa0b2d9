#if Server
import Coffer
import Foundation
import Testing

/// What `coffer-server` writes to its log, and how it stops.
@Suite struct ServerLogTests {
    @Test func theLogNamesEveryRequestButNoTokenNoKeyAndSIGTERMStopsCleanly() async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        try ServerProcess(issuer: issuer, data: data).stop()
        let admin = try ServerProcess.addOperator(issuer: issuer, data: data, name: "ops")
        let log = issuer.folder + "/server.log"
        let server = try ServerProcess(issuer: issuer, data: data, log: log, extra: ["--log-level", "debug"])
        let token = try issuer.token("logan")
        let forged = try issuer.mint([["key": "stranger", "kid": "es", "claims": Issuer.claims("logan")]])[0]
        var keys: [String] = []
        let (status, body) = try await server.address.request("/v1/keys/notes", token: token)
        #expect(status == 200)
        keys.append(try #require(body["key"] as? String))
        #expect(try await server.address.request("/v1/keys/notes", token: forged).0 == 401)
        let rotated = try await server.address.request(
            "/v1/admin/keys/rotate", token: admin,
            body: try JSONSerialization.data(withJSONObject: ["subject": "logan", "purpose": "notes"]))
        #expect(rotated.0 == 200)
        let (_, second) = try await server.address.request("/v1/keys/notes", token: token)
        keys.append(try #require(second["key"] as? String))
        #expect(try await server.address.request("/v1/keys/notes?token=\(token)", token: "x").0 == 401)

        // SIGTERM: a graceful stop, status 0.
        server.process.terminate()
        server.process.waitUntilExit()
        #expect(server.process.terminationReason == .exit && server.process.terminationStatus == 0)

        let text = try String(contentsOfFile: log, encoding: .utf8)
        let lines = text.split(separator: "\n").filter { $0.contains("request.id=") }
        #expect(lines.count >= 5, "\(text)")
        for secret in [token, forged, admin] + keys {
            // Any 16-character piece of a secret (a token's parts, a key's base64).
            for start in stride(from: 0, to: secret.count - 16, by: 8) {
                let piece = secret.dropFirst(start).prefix(16)
                #expect(!text.contains(piece), "the log holds part of a secret")
            }
        }
        #expect(!text.contains("logan"), "the log holds a subject")
        // An operator's change is a line of its own: who and what.
        #expect(text.contains("operator.action=rotate") && text.contains("operator ops: rotate"), "\(text)")
    }

    /// At the default level (info) each request writes one line, with its
    /// route's pattern (no purpose), status, duration and request id; with
    /// `--log-format json` each line is a JSON object with those members.
    @Test func aLinePerRequestAtInfoAndJSONWhenAsked() async throws {
        let issuer = try Issuer()
        for format in ["text", "json"] {
            let log = issuer.folder + "/server-\(format).log"
            let server = try ServerProcess(
                issuer: issuer, data: issuer.folder + "/data", log: log, extra: ["--log-format", format])
            #expect(try await server.address.request("/v1/keys/notes", token: try issuer.token("quiet")).0 == 200)
            // A refused token is answered after the refusal delay (100 ms by default).
            let began = Date()
            #expect(try await server.address.request("/v1/keys/notes", token: "junk").0 == 401)
            #expect(Date().timeIntervalSince(began) >= 0.1)
            #expect(try await server.address.request("/v1/nowhere", method: "GET", token: "junk").0 == 404)
            server.stop()
            let text = try String(contentsOfFile: log, encoding: .utf8)
            #expect(!text.contains("notes") && !text.contains("quiet"), "a purpose or subject in the log: \(text)")
            let lines = text.split(separator: "\n").map(String.init)
            if format == "text" {
                let requests = lines.filter { $0.contains("request.id=") }
                #expect(requests.count == 3, "\(text)")
                #expect(
                    requests.filter { $0.contains(" info ") && $0.hasSuffix("POST /v1/keys/{purpose} 200") }.count == 1)
                #expect(requests.filter { $0.hasSuffix("POST /v1/keys/{purpose} 401") }.count == 1)
                #expect(requests.filter { $0.hasSuffix("GET unmatched 404") }.count == 1, "\(requests)")
                continue
            }
            let objects = try lines.map { line in
                try #require(
                    try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            }
            #expect(objects.allSatisfy { $0["time"] is String && $0["level"] is String && $0["message"] is String })
            let requests = objects.filter { $0["request.id"] != nil }
            #expect(requests.count == 3, "\(text)")
            let ok = requests.first { $0["http.status"] as? String == "200" }
            #expect(ok?["http.route"] as? String == "/v1/keys/{purpose}" && ok?["http.method"] as? String == "POST")
            #expect(ok?["level"] as? String == "info" && (ok?["duration.ms"] as? String).flatMap(Double.init) != nil)
            #expect(objects.contains { ($0["message"] as? String)?.hasPrefix("coffer-server 0.1.0 starting") == true })
        }
        #expect(throws: (any Error).self) {
            try ServerProcess(issuer: issuer, data: issuer.folder + "/data", extra: ["--log-level", "loud"])
        }
        #expect(throws: (any Error).self) {
            try ServerProcess(issuer: issuer, data: issuer.folder + "/data", extra: ["--log-format", "xml"])
        }
    }
}
#endif
