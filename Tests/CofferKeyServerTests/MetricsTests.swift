#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// `GET /metrics`: what it counts, that it names no subject, and that an
/// independent parser (prometheus_client) reads it.
@Suite struct MetricsTests {
    static func scrape(_ client: any TestClientProtocol, token: String) async throws -> String {
        try await client.execute(uri: "/metrics", method: .get, headers: bearer(token)) { response in
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
            return String(buffer: response.body)
        }
    }

    /// The samples prometheus_client's own parser finds in `text`, as
    /// `name{label="value",…} value` lines with labels sorted.
    static func parsed(_ text: String) throws -> Set<String> {
        let script = """
            import sys
            from prometheus_client.parser import text_string_to_metric_families
            for family in text_string_to_metric_families(sys.stdin.read()):
                for s in family.samples:
                    labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                    print(f"{s.name}{{{labels}}} {s.value:g}")
            """
        let run = try Spawned.run(Issuer.root + "/.venv/bin/python", ["-c", script], input: Data(text.utf8))
        guard run.status == 0 else {
            throw CofferError(.malformed, "prometheus_client could not parse /metrics")
        }
        return Set(run.text.split(separator: "\n").map(String.init))
    }

    /// H9 (security review 4): /metrics answers only an operator token of
    /// the metrics scope; nothing else learns a byte of it.
    @Test func metricsNeedAnOperatorTokenOfTheMetricsScope() async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, kek: KeyRing(), backend: .sqlite)
        let rotator = try await server.store.addOperator(name: "rotator", scopes: [.rotate])
        let scraper = try await server.store.addOperator(name: "scraper", scopes: [.metrics])
        let user = try issuer.token("alice")
        try await server.run { client in
            for (headers, status, code) in [
                (HTTPFields(), HTTPResponse.Status.unauthorized, "token-missing"),
                (bearer(user), .unauthorized, "operator-token-invalid"),
                (bearer("cofop_" + String(repeating: "A", count: 43)), .unauthorized, "operator-token-invalid"),
                (bearer(rotator), .forbidden, "scope-missing"),
            ] {
                try await client.execute(uri: "/metrics", method: .get, headers: headers) { response in
                    #expect(response.status == status)
                    let body = String(buffer: response.body)
                    #expect(body.contains(code) && !body.contains("coffer_"), "\(body)")
                }
            }
            #expect(try await Self.scrape(client, token: scraper).contains("coffer_http_requests_total"))
        }
    }

    @Test(arguments: Backend.allCases) func requestsLatencyCacheAndRewrapAreCounted(_ backend: Backend) async throws {
        let issuer = try Issuer()
        var ring = KeyRing()
        let server = try await TestServer(issuer: issuer, kek: ring, backend: backend)
        let alice = try issuer.token("alice")
        let scraper = try await server.store.addOperator(name: "scraper", scopes: [.metrics])
        try await server.run { client in
            for purpose in ["notes", "notes", "photos"] {
                try await client.execute(uri: "/v1/keys/\(purpose)", method: .post, headers: bearer(alice)) {
                    #expect($0.status == .ok)
                }
            }
            try await client.execute(uri: "/v1/keys/notes", method: .post) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/v1/nothing/\(UUID())", method: .get) { #expect($0.status == .notFound) }
            let text = try await Self.scrape(client, token: scraper)
            #expect(!text.contains("alice") && !text.contains("notes") && !text.contains(alice))
            let samples = try Self.parsed(text)
            for sample in [
                #"coffer_http_requests_total{method="POST",route="/v1/keys/{purpose}",status="200"} 3"#,
                #"coffer_http_requests_total{method="POST",route="/v1/keys/{purpose}",status="401"} 1"#,
                #"coffer_http_request_duration_seconds_count{route="/v1/keys/{purpose}"} 4"#,
                #"coffer_token_cache_total{result="hit"} 2"#,
                #"coffer_token_cache_total{result="miss"} 1"#,
                // One after the other, each of the three fetches is a batch of its own.
                #"coffer_release_batches_total{} 3"#,
                #"coffer_release_requests_total{} 3"#,
                #"coffer_keys_awaiting_rewrap{} 0"#,
            ] {
                #expect(samples.contains(sample), "\(sample) not in\n\(samples.sorted().joined(separator: "\n"))")
            }
            // No sample names the path that matched no route.
            #expect(!text.contains("/v1/nothing"))
        }
        // A new KEK primary: both keys, the audit anchor key and the audit
        // link key wait to be rewrapped until a rewrap runs.
        _ = try ring.rotate()
        let rotated = try await TestServer(issuer: issuer, kek: ring, reopening: server)
        try await rotated.run { client in
            let before = try Self.parsed(try await Self.scrape(client, token: scraper))
            #expect(before.contains("coffer_keys_awaiting_rewrap{} 4"), "\(before)")
            let rewrapped = try await rotated.store.rewrap()
            #expect(rewrapped == 2)
            let after = try Self.parsed(try await Self.scrape(client, token: scraper))
            #expect(after.contains("coffer_keys_awaiting_rewrap{} 0"), "\(after)")
        }
    }
}
#endif
