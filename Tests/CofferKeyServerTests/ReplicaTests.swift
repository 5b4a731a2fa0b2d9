#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import NIOHTTP1
import Testing

/// Two `coffer-server` replicas on one PostgreSQL database: the same
/// answers from either, a replica killed under load without a failed
/// request at the other, and PostgreSQL restarted under load.
@Suite(.serialized) struct ReplicaTests {
    /// Replicas over one fresh schema and one data folder (the KEK ring).
    struct Replicas {
        let issuer: Issuer
        let data: String
        let database: [String]
        let environment: [String: String]
        let servers: [ServerProcess]

        /// With `logs`, replica N writes its log to `log(N)`.
        init(count: Int = 2, flags: [String] = [], logs: Bool = false) throws {
            issuer = try Issuer()
            data = issuer.folder + "/data"
            (database, environment) = try Backend.postgres.serverOptions()
            var servers: [ServerProcess] = []
            for number in 0..<count {
                servers.append(
                    try ServerProcess(
                        issuer: issuer, data: data, log: logs ? issuer.folder + "/replica-\(number).log" : nil,
                        extra: database + flags, environment: environment))
            }
            self.servers = servers
        }

        func addOperator() throws -> String {
            try ServerProcess.addOperator(
                issuer: issuer, data: data, name: "ops", extra: database, environment: environment)
        }

        func stop() { for server in servers where server.process.isRunning { server.stop() } }

        func log(_ number: Int) throws -> String {
            try String(contentsOfFile: issuer.folder + "/replica-\(number).log", encoding: .utf8)
        }
    }

    static func json(_ object: [String: Any]) throws -> Data { try JSONSerialization.data(withJSONObject: object) }

    @Test func eitherReplicaGivesTheSameAnswers() async throws {
        let replicas = try Replicas()
        defer { replicas.stop() }
        let (a, b) = (replicas.servers[0].address, replicas.servers[1].address)
        let token = try replicas.issuer.token("rita")
        // First requests racing on both replicas make exactly one key.
        let keys = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<60 {
                group.addTask {
                    let (status, body) = try await (index % 2 == 0 ? a : b).request("/v1/keys/notes", token: token)
                    return status == 200 ? body["key"] as? String ?? "none" : "status \(status)"
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(Set(keys).count == 1 && keys.count == 60, "\(Set(keys))")
        #expect(try TestPostgres.value(replicas.database[1], "SELECT count(*) FROM keys") == "1")

        // An operator made once works on both; what one replica changes the other serves at once.
        let admin = try replicas.addOperator()
        let (rotated, info) = try await a.request(
            "/v1/admin/keys/rotate", token: admin, body: try Self.json(["subject": "rita", "purpose": "notes"]))
        #expect(rotated == 200 && info["version"] as? Int == 2)
        let (_, current) = try await b.request("/v1/keys/notes", token: token)
        #expect(current["version"] as? Int == 2 && current["keyId"] as? String == info["keyId"] as? String)
        let (retired, _) = try await b.request(
            "/v1/admin/keys/retire", token: admin,
            body: try Self.json(["subject": "rita", "purpose": "notes", "minimumVersion": 2]))
        #expect(retired == 204)
        let (gone, problem) = try await a.request("/v1/keys/notes/versions/1", method: "GET", token: token)
        #expect(gone == 410 && problem["code"] as? String == "key-retired")
        let (shred, _) = try await a.request(
            "/v1/admin/subjects/shred", token: admin,
            body: try Self.json(["subject": "rita", "undoWindowSeconds": 600]))
        #expect(shred == 200)
        let (pending, body) = try await b.request("/v1/keys/notes", token: token)
        #expect(pending == 409 && body["code"] as? String == "shred-pending")
        let (undone, _) = try await b.request(
            "/v1/admin/subjects/undo-shred", token: admin, body: try Self.json(["subject": "rita"]))
        #expect(undone == 204)
        let (back, again) = try await a.request("/v1/keys/notes", token: token)
        #expect(back == 200 && again["key"] as? String == current["key"] as? String)

        // Both replicas appended to one chain, which `audit verify` checks;
        // one byte changed in one entry breaks it there.
        let tool =
            ["--data", replicas.data, "--kek-passphrase-file", replicas.issuer.folder + "/kek-passphrase"]
            + replicas.database
        var (status, out) = try await KEKRotationTests.serverTool(
            ["audit", "verify"] + tool, environment: replicas.environment)
        #expect(status == 0 && out.hasPrefix("audit chain intact: "), "\(out)")
        let releases = Int(
            try TestPostgres.value(replicas.database[1], "SELECT count(*) FROM audit WHERE action = 'release'"))
        #expect(releases == 62)
        _ = try TestPostgres.value(replicas.database[1], "UPDATE audit SET purpose = 'notez' WHERE seq = 30")
        (status, out) = try await KEKRotationTests.serverTool(
            ["audit", "verify"] + tool, environment: replicas.environment)
        #expect(status == 1 && out.hasPrefix("audit chain broken at entry 30: "), "\(out)")
        (status, out) = try await KEKRotationTests.serverTool(
            ["audit", "export", "--subject", "rita"] + tool, environment: replicas.environment)
        let actions = out.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["action"] as? String
        }
        #expect(status == 0 && actions.first == "create" && actions.contains("undo-shred"), "\(out.prefix(400))")
    }

    @Test func killingOneReplicaUnderLoadFailsNoRequestAtTheOther() async throws {
        let replicas = try Replicas()
        defer { replicas.stop() }
        let (victim, survivor) = (replicas.servers[0], replicas.servers[1])
        let token = try replicas.issuer.token("load")
        let acknowledged = Locked([String: String]())
        let survivorFailures = Locked([String]())
        let survivorDone = Locked(0)
        let stop = Locked(false)
        defer { stop.withLock { $0 = true } }
        let (victimAddress, survivorAddress) = (victim.address, survivor.address)
        let load = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<6 {
                    let target = worker % 2 == 0 ? victimAddress : survivorAddress
                    group.addTask {
                        var number = 0
                        while !stop.withLock({ $0 }) {
                            number += 1
                            let purpose = "w\(worker)-\(number)"
                            let answer = try? await target.request("/v1/keys/\(purpose)", token: token)
                            if let (status, body) = answer, status == 200, let key = body["key"] as? String {
                                acknowledged.withLock { $0[purpose] = key }
                                if worker % 2 == 1 { survivorDone.withLock { $0 += 1 } }
                            } else if worker % 2 == 1 {
                                survivorFailures.withLock { $0.append("\(purpose): \(answer?.0 ?? 0)") }
                            } else {
                                return  // the killed replica is gone
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        while acknowledged.withLock({ $0.count }) < 60 { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(Int.random(in: 0...200)))
        victim.kill9()
        let atKill = survivorDone.withLock { $0 }
        try await Task.sleep(for: .seconds(1))
        stop.withLock { $0 = true }
        try await load.value
        #expect(survivorFailures.withLock { $0 }.isEmpty, "\(survivorFailures.withLock { $0.prefix(5) })")
        #expect(survivorDone.withLock { $0 } > atKill, "the survivor served nothing after the kill")
        // Every key either replica acknowledged is there, unchanged.
        var lost = 0
        for (purpose, key) in acknowledged.withLock({ $0 }) {
            let (status, body) = try await survivor.address.request("/v1/keys/\(purpose)", token: token)
            if status != 200 || body["key"] as? String != key { lost += 1 }
        }
        #expect(lost == 0, "\(lost) acknowledged keys changed or vanished")
        // Every acknowledged key was audited before it was sent.
        let created = Int(
            try TestPostgres.value(replicas.database[1], "SELECT count(*) FROM audit WHERE action = 'create'"))
        #expect((created ?? 0) >= acknowledged.withLock { $0.count })
    }

    /// One subject's limit is counted in the database: 30 requests at once
    /// across both replicas are granted exactly the limit (each replica
    /// counting alone would grant it twice).
    @Test func rateLimitsAreSharedAcrossReplicas() async throws {
        let replicas = try Replicas(flags: ["--rate-limit", "6/86400"])
        defer { replicas.stop() }
        let addresses = replicas.servers.map(\.address)
        let token = try replicas.issuer.token("quinn")
        let statuses = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for index in 0..<30 {
                group.addTask {
                    let (status, body) = try await addresses[index % 2].request("/v1/keys/notes", token: token)
                    return (status, body["code"] as? String)
                }
            }
            return try await group.reduce(into: [(Int, String?)]()) { $0.append($1) }
        }
        #expect(statuses.filter { $0.0 == 200 }.count == 6, "\(statuses)")
        #expect(statuses.filter { $0.0 == 429 && $0.1 == "rate-limited" }.count == 24, "\(statuses)")
        // 6 grants and at least the refusal that found the window full; a
        // replica that saw one refuses later requests from memory (G7).
        let written = Int(
            try TestPostgres.value(replicas.database[1], "SELECT count FROM rate_counts WHERE bucket LIKE '%/quinn'"))
        #expect((7...30).contains(written ?? 0), "\(String(describing: written))")
    }

    /// With --require-dpop on both replicas: a bearer token alone is
    /// refused; a nonce one replica issued is accepted by the other; a
    /// proof used at one is refused as a replay at the other.
    @Test func proofsAreCheckedAcrossReplicas() async throws {
        let site = "https://keys.test"
        let replicas = try Replicas(flags: ["--require-dpop", "--public-url", site])
        defer { replicas.stop() }
        let (a, b) = (replicas.servers[0].address, replicas.servers[1].address)
        let token = try replicas.issuer.token("uma")
        let (bare, refusal) = try await a.request("/v1/keys/notes", token: token)
        #expect(bare == 401 && refusal["code"] as? String == "dpop-required")
        let spec: [String: Any] = ["device": "phone", "htm": "POST", "htu": site + "/v1/keys/notes", "token": token]
        let challenge = try replicas.issuer.proofs([spec])[0].proof
        let (challenged, problem, headers) = try await a.exchange("/v1/keys/notes", token: token, proof: challenge)
        #expect(challenged == 401 && problem["code"] as? String == "dpop-nonce-required")
        let nonce = try #require(headers.first(name: "DPoP-Nonce"))
        let proof = try replicas.issuer.proofs([spec.merging(["nonce": nonce]) { $1 }])[0]
        let (granted, key, _) = try await b.exchange("/v1/keys/notes", token: token, proof: proof.proof)
        #expect(granted == 200 && key["device"] as? String == "jkt:" + proof.jkt)
        let (replayed, again, _) = try await a.exchange("/v1/keys/notes", token: token, proof: proof.proof)
        #expect(replayed == 401 && again["code"] as? String == "dpop-proof-replayed")

        // One new proof sent 16 times at once, 8 to each replica: the copies
        // share batches on each replica and race across them; exactly one
        // is granted.
        let raced = try replicas.issuer.proofs([spec.merging(["nonce": nonce]) { $1 }])[0].proof
        let answers = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for copy in 0..<16 {
                group.addTask {
                    let (status, body, _) = try await (copy % 2 == 0 ? a : b).exchange(
                        "/v1/keys/notes", token: token, proof: raced)
                    return (status, body["code"] as? String)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.filter { $0.0 == 200 }.count == 1)
        #expect(answers.filter { $0 == (401, "dpop-proof-replayed") }.count == 15)
    }

    @Test func restartingPostgresUnderLoadAnswers503ThenRecovers() async throws {
        let replicas = try Replicas(logs: true)
        defer { replicas.stop() }
        let token = try replicas.issuer.token("outage")
        let addresses = replicas.servers.map(\.address)
        var keys: [String: String] = [:]
        for number in 0..<20 {
            let (status, body) = try await addresses[number % 2].request("/v1/keys/p\(number)", token: token)
            #expect(status == 200)
            keys["p\(number)"] = body["key"] as? String
        }
        let expected = keys
        struct Answer: Sendable {
            let status: Int
            let code: String?
            let right: Bool
            let seconds: Double
        }
        let answers = Locked([Answer]())
        let stop = Locked(false)
        // Before the replicas stop (a graceful stop waits for requests in flight).
        defer { stop.withLock { $0 = true } }
        let load = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        while !stop.withLock({ $0 }) {
                            let purpose = "p\(Int.random(in: 0..<20))"
                            let start = Date()
                            let (status, body) = try await addresses[worker % 2].request(
                                "/v1/keys/\(purpose)", token: token)
                            let answer = Answer(
                                status: status, code: body["code"] as? String,
                                right: status != 200 || body["key"] as? String == expected[purpose],
                                seconds: Date().timeIntervalSince(start))
                            answers.withLock { $0.append(answer) }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        try await TestPostgres.control("stop")
        try await Task.sleep(for: .seconds(4))
        let (readiness, ready) = try await addresses[0].request("/v1/ready", method: "GET", token: token)
        #expect(readiness == 503 && ready["code"] as? String == "database-unavailable")
        try await TestPostgres.control("start")
        // Both replicas recover by themselves, without a restart.
        let recovered = Date()
        for address in addresses {
            while try await address.request("/v1/ready", method: "GET", token: token).0 != 200 {
                #expect(Date().timeIntervalSince(recovered) < 20, "a replica did not recover")
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        stop.withLock { $0 = true }
        try await load.value
        let all = answers.withLock { $0 }
        let unavailable = all.filter { $0.status == 503 }
        #expect(!unavailable.isEmpty, "no request saw the outage")
        #expect(unavailable.allSatisfy { $0.code == "database-unavailable" })
        #expect(all.allSatisfy { $0.status == 200 || $0.status == 503 }, "\(Set(all.map(\.status)))")
        #expect(all.allSatisfy { $0.right }, "a key changed")
        // None hung. A release makes two round trips (the key's row, then its
        // audit entry), each under the server's 3 s deadline: 6 s and slack.
        #expect(all.map(\.seconds).max()! < 7.5, "the slowest answer took \(all.map(\.seconds).max()!) s")
        #expect(all.suffix(8).allSatisfy { $0.status == 200 }, "the replicas still fail after the restart")
        // Each replica's log says the database went away, once, and came back, once.
        for number in 0..<2 {
            let lines = try replicas.log(number).split(separator: "\n")
            let away = lines.indices.filter {
                lines[$0].contains(" warning ") && lines[$0].contains("database unavailable")
            }
            let back = lines.indices.filter { lines[$0].contains("database available again after") }
            #expect(away.count == 1 && back.count == 1 && away[0] < back[0], "replica \(number): \(away) \(back)")
            #expect(!lines.contains { $0.contains("password") }, "a log line names the password")
        }
    }

    /// Replicas starting at once take turns on the migrations; a database a
    /// newer server migrated, a password in the URL, a bad schema name and
    /// an unreachable server are clear refusals.
    @Test func migrationsRaceAndBadDatabasesAreRefused() async throws {
        let url = try TestPostgres.freshURL()
        let password = try TestPostgres.server().password
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    let store = try await ServerKeyStore.open(postgres: url, password: password, kek: KeyRing())
                    await store.close()
                }
            }
            try await group.waitForAll()
        }
        // One row per migration, however many stores raced to apply them.
        // (1: the keys, 2: the audit log, 3: rate-limit counts and DPoP
        // proofs, 4: their expiry indexes, 5: the functions that append to
        // the audit chain and read a batch's keys, 6: the audit anchors,
        // 7: the operators' realms, 8: the stores' anchors, 9: the
        // operators' expiry, 10: the KEK ring's row, 11: the release that
        // names its actor, 12: keyed audit links; numbered from 1 with no gap.)
        #expect(
            try TestPostgres.value(url, "SELECT count(*) || ' ' || max(version) FROM coffer_server_migrations")
                == "12 12")
        _ = try TestPostgres.value(url, "INSERT INTO coffer_server_migrations VALUES (99, 0)")
        let newer = await #expect(throws: CofferError.self) {
            _ = try await ServerKeyStore.open(postgres: url, password: password, kek: KeyRing())
        }
        #expect(newer?.code == .unsupported)
        let base = try TestPostgres.server().url
        for bad in [base.replacingOccurrences(of: "coffer@", with: "coffer:secret@"), base + "?schema=Bad-Name"] {
            let error = await #expect(throws: CofferError.self) {
                _ = try await ServerKeyStore.open(postgres: bad, password: password, kek: KeyRing())
            }
            #expect(error?.code == .invalidArgument)
            #expect(error.map { !"\($0)".contains("secret") } ?? true)
        }
        let start = Date()
        // Checked by one connection before the pool starts: refused at once, with the reason.
        let unreachable = await #expect(throws: CofferError.self) {
            _ = try await ServerKeyStore.open(
                postgres: "postgres://coffer@127.0.0.1:1/coffer", password: password, kek: KeyRing(),
                deadline: .seconds(1))
        }
        #expect(unreachable?.code == .io)
        #expect(
            unreachable.map { "\($0)".lowercased().contains("refused") } == true, "\(String(describing: unreachable))")
        #expect(Date().timeIntervalSince(start) < 5)
    }
}
#endif
