#if Server
import Foundation
import Testing

/// With both rate limits on, a key request's shared counts are raised in
/// its release's own transaction, those of requests that arrive together
/// once per bucket (issue 56: each request made two synced commits of its
/// own for them before), and stay exact.
@Suite(.serialized) struct RateCountBatchTests {
    @Test(arguments: Backend.allCases) func countsArrivingTogetherShareATransaction(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let (database, environment) = try backend.serverOptions()
        let server = try ServerProcess(
            issuer: issuer, data: data,
            extra: database + ["--rate-limit", "1000/86400", "--address-rate-limit", "1000/86400"],
            environment: environment)
        defer { server.stop() }
        let scraper = try ServerProcess.addOperator(
            issuer: issuer, data: data, name: "scraper", extra: database + ["--scope", "metrics:read"],
            environment: environment)
        let token = try issuer.token("carla")
        let address = server.address
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<200 { group.addTask { try await address.request("/v1/keys/notes", token: token).0 } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == 200 })
        let (_, text) = try await address.text("/metrics", token: scraper)
        let value = { (name: String) in
            text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
        }
        let (batches, counted) = (
            value("coffer_rate_count_batches_total") ?? 0, value("coffer_rate_count_requests_total") ?? 0
        )
        // Each fetch counts against both limits; the scrape, an operator's,
        // against the address's. A fetch's counts ride in its release's
        // transaction: only the scrape's count has one of its own.
        #expect(counted == 401, "\(counted) counts")
        #expect(batches == 1, "\(batches) transactions of counts alone")
        let sql = "SELECT count FROM rate_counts WHERE bucket = 'subject:default/carla'"
        let stored =
            backend == .sqlite
            ? try Spawned.run("/usr/bin/sqlite3", [data + "/keys.sqlite", sql]).text
                .trimmingCharacters(in: .whitespacesAndNewlines)
            : try TestPostgres.value(database[1], sql)
        #expect(stored == "200")
    }

    /// The counts commit without a sync of their own (the release after
    /// them syncs both); a count a client was answered for still survives
    /// kill -9: a limit of 5 reached, the server killed and started again,
    /// the sixth request is refused.
    @Test(arguments: Backend.allCases) func countsSurviveKill9(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let (database, environment) = try backend.serverOptions()
        let limits = database + ["--rate-limit", "5/86400"]
        let token = try issuer.token("carla")
        let first = try ServerProcess(issuer: issuer, data: data, extra: limits, environment: environment)
        for _ in 0..<5 { #expect(try await first.address.request("/v1/keys/notes", token: token).0 == 200) }
        first.kill9()
        first.process.waitUntilExit()
        let second = try ServerProcess(issuer: issuer, data: data, extra: limits, environment: environment)
        defer { second.stop() }
        #expect(try await second.address.request("/v1/keys/notes", token: token).0 == 429)
        if backend == .sqlite {
            let mode = try Spawned.run("/usr/bin/sqlite3", [data + "/keys.sqlite", "PRAGMA journal_mode"]).text
            #expect(mode.contains("wal"))
        }
    }

    /// Sixty requests of one subject at once under a limit of 15: exactly
    /// 15 keys are released and 45 refused, however the server batched them
    /// (on SQLite a batch raises each bucket once, by its requests' number,
    /// and gives each request its own place in that count).
    @Test(arguments: Backend.allCases) func requestsAtOnceAreCountedExactly(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let (database, environment) = try backend.serverOptions()
        let server = try ServerProcess(
            issuer: issuer, data: issuer.folder + "/data",
            extra: database + ["--rate-limit", "15/86400", "--address-rate-limit", "1000/86400"],
            environment: environment)
        defer { server.stop() }
        let (token, address) = (try issuer.token("carla"), server.address)
        var statuses: [Int] = []
        try await withThrowingTaskGroup(of: Int.self) { group in
            for number in 0..<60 {
                group.addTask { try await address.request("/v1/keys/p\(number % 4)", token: token).0 }
            }
            for try await status in group { statuses.append(status) }
        }
        #expect(statuses.filter { $0 == 200 }.count == 15, "\(statuses.sorted())")
        #expect(statuses.filter { $0 == 429 }.count == 45, "\(statuses.sorted())")
    }
}
#endif
