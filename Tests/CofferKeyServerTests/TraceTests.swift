#if Server
import AsyncHTTPClient
import Coffer
import CofferKeyClient
import CofferKeyClientNIO
import Crypto
import Foundation
import Instrumentation
import NIOCore
import NIOHTTP1
import Testing

/// Traces (issue 59, part 2): `coffer-server serve --otel-endpoint` sends
/// a key fetch's spans — the request, its authentication, its release
/// batch and the batch's database commit — to an OTLP/HTTP receiver that
/// is not Coffer's (Peers/otlp_receiver.py, on PyPI's opentelemetry-proto);
/// a client's `traceparent` joins the client's trace, and CofferKeyClient
/// sends the app's; no span carries a token, subject, purpose or key.
@Suite struct TraceTests {
    /// The app's side: an instrument that writes the context's
    /// `traceparent`, as an app's OpenTelemetry tracer would.
    enum Traceparent: ServiceContextKey { typealias Value = String }
    struct AppInstrument: Instrument {
        func extract<Carrier, Extract: Extractor>(
            _ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract
        ) where Extract.Carrier == Carrier {}

        func inject<Carrier, Inject: Injector>(
            _ context: ServiceContext, into carrier: inout Carrier, using injector: Inject
        ) where Inject.Carrier == Carrier {
            if let value = context[Traceparent.self] { injector.inject(value, forKey: "traceparent", into: &carrier) }
        }
    }
    /// The instrument writes nothing where no context carries the key,
    /// so other suites' clients send what they did (TestTracing installs it).

    static func hex(_ count: Int) -> String { Hex.encode((0..<count).map { _ in UInt8.random(in: 0...255) }) }

    /// The receiver, and the port it listens on.
    static func receiver(writingTo file: String) throws -> (Process, Int) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Issuer.root + "/.venv/bin/python")
        process.arguments = [Issuer.root + "/Tests/CofferKeyServerTests/Peers/otlp_receiver.py", file]
        let stdout = Pipe()
        process.standardOutput = stdout
        // Not this process's standard error: swift test reads that to its end.
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = stdout.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw CofferError(.io, "otlp_receiver.py stopped before listening") }
            line += chunk
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw CofferError(.malformed, "otlp_receiver.py said \(String(decoding: line, as: UTF8.self))") }
        return (process, port)
    }

    /// `inner` started and ended within `outer`.
    static func within(_ inner: [String: Any], _ outer: [String: Any]) -> Bool {
        let (start, end) = (inner["start"] as? Int ?? 0, inner["end"] as? Int ?? 0)
        return start >= outer["start"] as? Int ?? .max && end <= outer["end"] as? Int ?? 0 && start <= end
    }

    /// A receiver writing to `file`, and a server sending it spans (to the
    /// endpoint written with or without a trailing slash).
    static func tracedServer(_ issuer: Issuer, spansTo file: String, trailingSlash: Bool) throws
        -> (receiver: Process, server: ServerProcess)
    {
        let (receiver, port) = try receiver(writingTo: file)
        do {
            let server = try ServerProcess(
                arguments: try ServerProcess.serveArguments(issuer: issuer, data: issuer.folder + "/data") + [
                    "--otel-endpoint", "http://127.0.0.1:\(port)" + (trailingSlash ? "/" : ""),
                ], log: issuer.folder + "/server.log")
            return (receiver, server)
        } catch {
            kill(receiver.processIdentifier, SIGKILL)
            receiver.waitUntilExit()
            throw error
        }
    }

    @Test func aKeyFetchIsTracedAndJoinsTheClientsTrace() async throws {
        let issuer = try Issuer()
        let file = issuer.folder + "/spans.jsonl"
        let (receiver, server) = try Self.tracedServer(issuer, spansTo: file, trailingSlash: true)
        defer {
            server.stop()
            kill(receiver.processIdentifier, SIGKILL)
            receiver.waitUntilExit()
        }
        let subject = "subject-" + Self.hex(6)
        let purpose = "purpose-" + Self.hex(6)
        let token = try issuer.token(subject)

        // A fetch with no trace context: a trace of its own.
        let (status, body) = try await server.address.request("/v1/keys/\(purpose)", token: token)
        #expect(status == 200, "\(body)")
        // The app's fetch inside its trace: CofferKeyClient sends the context.
        TestTracing.bootstrapped
        let (traceID, parentID) = (Self.hex(16), Self.hex(8))
        var context = ServiceContext.topLevel
        context[Traceparent.self] = "00-\(traceID)-\(parentID)-01"
        let client = try KeyServerClient(
            server: URL(string: server.address.url)!, account: subject, token: { token },
            transport: AsyncHTTPClientTransport(KeyClientTests.http))
        let key = try await ServiceContext.$current.withValue(context) {
            try await client.currentKey(purpose: purpose)
        }
        // A refused token: its outcome, not its text.
        #expect(try await server.address.request("/v1/keys/\(purpose)", token: "x.y.z").0 == 401)
        // The exporter sends what is left as the server stops.
        server.stop()

        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        let spans = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        let requests = spans.filter { $0["name"] as? String == "POST /v1/keys/{purpose}" }
        try #require(requests.count == 3, "\(spans)")
        #expect(requests.allSatisfy { $0["kind"] as? Int == 2 && $0["service"] as? String == "coffer-server" })
        func children(of span: [String: Any]) -> [String: [String: Any]] {
            Dictionary(
                spans.filter { $0["parent_span_id"] as? String == span["span_id"] as? String }.map {
                    ($0["name"] as! String, $0)
                }, uniquingKeysWith: { first, _ in first })
        }
        let joined = try #require(requests.first { $0["trace_id"] as? String == traceID })
        #expect(joined["parent_span_id"] as? String == parentID)
        let own = requests.filter { $0["trace_id"] as? String != traceID }
        #expect(own.count == 2 && own.allSatisfy { ($0["parent_span_id"] as? String ?? "x").isEmpty })
        for request in [joined]
            + own.filter({ ($0["attributes"] as! [String: Any])["http.response.status_code"] as? Int == 200 })
        {
            let attributes = request["attributes"] as! [String: Any]
            #expect(attributes["http.route"] as? String == "/v1/keys/{purpose}")
            #expect(attributes["coffer.outcome"] as? String == "ok")
            let steps = children(of: request)
            #expect(Set(steps.keys) == ["authenticate", "release batch"], "\(steps.keys)")
            let batch = try #require(steps["release batch"])
            let commit = try #require(children(of: batch)["database commit"])
            #expect(((commit["attributes"] as! [String: Any])["coffer.batch.items"] as? Int ?? 0) >= 1)
            #expect(Self.within(commit, batch) && Self.within(batch, request))
        }
        let refused = try #require(
            own.first { ($0["attributes"] as! [String: Any])["http.response.status_code"] as? Int == 401 })
        let outcome = (refused["attributes"] as! [String: Any])["coffer.outcome"] as? String
        #expect(outcome?.hasPrefix("token-") == true, "\(refused)")
        let authentication = try #require(children(of: refused)["authenticate"])
        #expect((authentication["attributes"] as! [String: Any])["coffer.outcome"] as? String == outcome)
        #expect(authentication["status"] as? Int == 2 && children(of: refused)["release batch"] == nil)

        // Every exported span, names, attributes and events: nothing the
        // requests carried.
        let bytes = key.key.withUnsafeBytes { Array($0) }
        let secrets =
            [
                token, subject, purpose, "x.y.z", Base64URL.encode(bytes), Data(bytes).base64EncodedString(),
                Hex.encode(bytes),
            ]
            + token.split(separator: ".").map(String.init)
        let exported = String(decoding: try Data(contentsOf: URL(fileURLWithPath: file)), as: UTF8.self)
        for secret in secrets { #expect(!exported.contains(secret), "a span carries \(secret.prefix(12))…") }
    }

    /// Hostile trace headers: each request is answered as without one, in
    /// a trace of its own, and the server keeps tracing.
    @Test func aMalformedTraceparentStartsATraceOfItsOwn() async throws {
        let issuer = try Issuer()
        let file = issuer.folder + "/spans.jsonl"
        let (receiver, server) = try Self.tracedServer(issuer, spansTo: file, trailingSlash: false)
        defer {
            server.stop()
            kill(receiver.processIdentifier, SIGKILL)
            receiver.waitUntilExit()
        }
        let token = try issuer.token("hostile-trace")
        let (zeros, valid) = (String(repeating: "0", count: 32), Self.hex(16))
        let hostile: [[String]] = [
            ["garbage"], ["00-\(zeros)-0000000000000000-01"], ["ff-\(valid)-\(Self.hex(8))-01"],
            ["00-\(String(repeating: "z", count: 32))-\(Self.hex(8))-01"], ["00-\(valid)-\(Self.hex(8))-01-extra"],
            [String(repeating: "a", count: 6000)],
            ["00-\(valid)-\(Self.hex(8))-01", "00-\(Self.hex(16))-\(Self.hex(8))-01"],
        ]
        for values in hostile {
            var request = HTTPClientRequest(url: server.url + "/v1/keys/notes")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            for value in values { request.headers.add(name: "traceparent", value: value) }
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            _ = try await response.body.collect(upTo: 1 << 16)
            #expect(response.status.code == 200, "\(values.map { $0.prefix(40) })")
        }
        server.stop()
        let spans = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        let requests = spans.filter { $0["name"] as? String == "POST /v1/keys/{purpose}" }
        #expect(requests.count == hostile.count, "\(requests.count) request spans")
        // None joined a trace it was not validly given.
        #expect(requests.allSatisfy { ($0["trace_id"] as? String).map { $0 != zeros && $0.count == 32 } == true })
        #expect(requests.filter { ($0["parent_span_id"] as? String ?? "").isEmpty }.count >= hostile.count - 1)
    }
}
#endif
