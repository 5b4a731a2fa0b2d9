#if Server
import Coffer
import Foundation
import Testing

/// The executable: `kill -9` while keys are being made loses none that
/// was acknowledged; schemathesis finds no 5xx and no response outside
/// docs/openapi.yaml.
@Suite(.serialized) struct ServerProcessTests {
    @Test func killNineWhileMakingKeysLosesNoAcknowledgedKey() async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let token = try issuer.token("kim")
        var acknowledged: [String: String] = [:]
        for round in 0..<5 {
            let server = try ServerProcess(issuer: issuer, data: data)
            let made = Locked([String: String]())
            let address = server.address
            let load = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<6 {
                        group.addTask {
                            for number in 0..<10_000 {
                                let purpose = "r\(round)-w\(worker)-\(number)"
                                guard
                                    let (status, body) = try? await address.request("/v1/keys/\(purpose)", token: token)
                                else { return }  // the server is gone
                                if status == 200, let key = body["key"] as? String {
                                    made.withLock { $0[purpose] = key }
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            // Killed once it has acknowledged some keys (however slow the
            // machine), at a random moment after.
            while made.withLock({ $0.count }) < 15 { try await Task.sleep(for: .milliseconds(10)) }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...300)))
            server.kill9()
            _ = try? await load.value
            acknowledged.merge(made.withLock { $0 }) { $1 }
        }
        #expect(acknowledged.count > 50, "the server acknowledged too few keys to prove anything")
        let server = try ServerProcess(issuer: issuer, data: data)
        defer { server.stop() }
        var lost = 0
        for (purpose, key) in acknowledged {
            let (status, body) = try await server.address.request("/v1/keys/\(purpose)", token: token)
            if status != 200 || body["key"] as? String != key || body["version"] as? Int != 1 { lost += 1 }
        }
        #expect(lost == 0, "\(lost) of \(acknowledged.count) acknowledged keys changed or vanished")
    }

    @Test func schemathesisFindsNothingAgainstTheOpenAPIDocument() async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        try ServerProcess(issuer: issuer, data: data).stop()
        let admin = try ServerProcess.addOperator(issuer: issuer, data: data, name: "fuzz")
        #expect(admin.hasPrefix("cofop_"))
        // Its many refused tokens answered at once, not after --refusal-delay's 100 ms.
        let server = try ServerProcess(issuer: issuer, data: data, extra: ["--refusal-delay", "0"])
        defer { server.stop() }
        let user = try issuer.token("schemathesis", ["exp": Int(Date().timeIntervalSince1970) + 3600])
        // Key routes and the user's store anchors as a signed-in user;
        // operator routes as an operator. A shredded subject answers 410 to
        // well-formed requests by design, so the operator run leaves out
        // "positive data acceptance".
        for (token, filter, extra) in [
            (user, ["--exclude-path-regex", "^/v1/(admin|stores)"], [String]()),
            (
                admin, ["--include-path-regex", "^/v1/(admin|stores)"],
                ["--exclude-checks", "positive_data_acceptance"]
            ),
        ] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Issuer.root + "/.venv/bin/st")
            // Its cache of failures goes to the test's folder, not the repository.
            process.currentDirectoryURL = URL(fileURLWithPath: issuer.folder)
            process.arguments =
                [
                    "run", Issuer.root + "/docs/openapi.yaml", "--url", server.url, "-H",
                    "Authorization: Bearer \(token)",
                    "--checks", "all", "--max-examples", "40", "--seed", "1",
                ] + filter + extra
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            process.environment = ProcessInfo.processInfo.environment.merging([
                "NO_COLOR": "1", "SCHEMATHESIS_HOOKS": "",
            ]) { $1 }
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "schemathesis (\(filter[1])):\n\(text.suffix(4000))")
        }
    }
}
#endif
