#if Server
import Coffer
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import CofferKeyClient

/// A server that answers what no key server would: the client says so,
/// over either transport, and never takes junk for a key.
@Suite struct KeyClientTransportTests {
    static func hostileServer() -> Application<RouterResponder<BasicRequestContext>> {
        let router = Router()
        let key =
            #"{"purpose":"notes","version":1,"keyId":"00112233445566aa","key":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}"#
        @Sendable func answer(_ status: HTTPResponse.Status, _ body: [UInt8], json: Bool = true) -> Response {
            Response(
                status: status, headers: [.contentType: json ? "application/json" : "text/html"],
                body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        router.post("/v1/keys/huge") { _, _ in
            answer(.ok, Array(repeating: UInt8(ascii: " "), count: 200_000) + [UInt8(ascii: "{"), UInt8(ascii: "}")])
        }
        router.post("/v1/keys/text") { _, _ in answer(.ok, Array("hello".utf8), json: false) }
        router.post("/v1/keys/page") { _, _ in
            answer(.internalServerError, Array("<html>oops</html>".utf8), json: false)
        }
        router.post("/v1/keys/other") { _, _ in answer(.ok, Array(key.utf8)) }
        router.post("/v1/keys/short") { _, _ in
            answer(.ok, Array(key.replacingOccurrences(of: "AAAA=", with: "=").utf8))
        }
        router.post("/v1/keys/slow") { _, _ -> Response in
            try await Task.sleep(for: .seconds(5))
            return answer(.ok, Array(key.utf8))
        }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    @Test(arguments: KeyClientTests.Transport.allCases) func junkIsRefusedAndSilenceTimesOut(
        _ transport: KeyClientTests.Transport
    ) async throws {
        try await Self.hostileServer().test(.live) { server in
            let client = try KeyClientTests.client(
                server.port, token: "t", cache: nil, timeout: .seconds(1), over: transport)
            for (purpose, status) in [("huge", nil), ("text", 200), ("page", 500), ("other", 200), ("short", 200)] {
                let error = await #expect(throws: KeyClientError.self, "\(purpose)") {
                    try await client.currentKey(purpose: purpose)
                }
                #expect(error?.code == .malformedResponse, "\(purpose): \(String(describing: error))")
                if let status { #expect(error?.status == status, "\(purpose)") }
            }
            let start = ContinuousClock.now
            let error = await #expect(throws: KeyClientError.self) { try await client.currentKey(purpose: "slow") }
            #expect(error?.code == .unreachable)
            #expect(ContinuousClock.now - start < .seconds(3))
        }
    }

    /// H4 of the fourth security review: a server that redirects a key
    /// request to another origin over plain http (here 127.0.0.2), which
    /// logs every Authorization header that reaches it. Neither transport
    /// follows: the 302 is the answer, reported as one, and the token never
    /// leaves for the other host. (Before, URLSession followed and sent
    /// `Bearer …` there.)
    @Test(arguments: KeyClientTests.Transport.allCases) func aRedirectIsNotFollowedAndTheTokenStays(
        _ transport: KeyClientTests.Transport
    ) async throws {
        let seen = Locked<[String]>([])
        let thief = Router()
        @Sendable func log(_ request: Request, _ context: BasicRequestContext) -> Response {
            seen.withLock { $0.append(request.headers[.authorization] ?? "(none)") }
            return Response(status: .ok)
        }
        // A 302 turns the POST into a GET where it is followed.
        thief.post("/v1/keys/notes", use: log)
        thief.get("/v1/keys/notes", use: log)
        // Not `.test(.live)`: that listens on localhost, whatever the address.
        let (ports, listening) = AsyncStream<Int>.makeStream()
        let elsewhere = Application(
            router: thief, configuration: .init(address: .hostname("127.0.0.2", port: 0)),
            onServerRunning: { listening.yield($0.localAddress?.port ?? 0) })
        let running = Task { try await elsewhere.runService() }
        defer { running.cancel() }
        var next = ports.makeAsyncIterator()
        let port = try #require(await next.next())
        let router = Router()
        router.post("/v1/keys/moved") { _, _ in
            Response(status: .found, headers: [.location: "http://127.0.0.2:\(port)/v1/keys/notes"])
        }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            .test(.live) { server in
                let client = try KeyClientTests.client(
                    server.port, token: "secret-sign-in-token", cache: nil, timeout: .seconds(5), over: transport)
                let error = await #expect(throws: KeyClientError.self) {
                    try await client.currentKey(purpose: "moved")
                }
                #expect(error?.status == 302, "\(String(describing: error))")
            }
        #expect(seen.withLock { $0 }.isEmpty, "the other host was sent: \(seen.withLock { $0 })")
    }

    /// H7: an answer that never ends. The limit (64 KiB) holds while the
    /// body streams: the client stops at once with a malformed answer, and
    /// the process's memory does not grow with what the server sends.
    /// (Before, URLSession read until the timeout — the review's 400 MiB
    /// answer took 864 MB.)
    @Test(arguments: KeyClientTests.Transport.allCases) func anEndlessAnswerStopsAtTheLimit(
        _ transport: KeyClientTests.Transport
    ) async throws {
        let router = Router()
        router.post("/v1/keys/endless") { _, _ -> Response in
            let chunk = ByteBuffer(repeating: UInt8(ascii: " "), count: 1 << 16)
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody { writer in
                    // Until the client goes away (the write then fails), or 4 GiB.
                    for _ in 0..<65_536 { try await writer.write(chunk) }
                    try await writer.finish(nil)
                })
        }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
            .test(.live) { server in
                let client = try KeyClientTests.client(
                    server.port, token: "t", cache: nil, timeout: .seconds(20), over: transport)
                let before = Self.residentBytes()
                let start = ContinuousClock.now
                let error = await #expect(throws: KeyClientError.self) {
                    try await client.currentKey(purpose: "endless")
                }
                #expect(error?.code == .malformedResponse, "\(String(describing: error))")
                #expect(ContinuousClock.now - start < .seconds(5), "stopped after \(ContinuousClock.now - start)")
                let grown = Self.residentBytes() - before
                #expect(grown < 64 << 20, "the process grew by \(grown >> 20) MiB")
            }
    }

    /// This process's resident memory (Linux: /proc/self/statm).
    static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// A URLSession task that never ends, cancelled or not, as
    /// FoundationNetworking's sometimes does: the limit and the caller's
    /// cancellation still answer at once. (With a task group that waits
    /// for its children, both waited for the hold below to end, 10 s on.)
    @Test func theLimitHoldsWhenTheWorkIgnoresCancellation() async throws {
        let hold = Hold()
        DispatchQueue.global().asyncAfter(deadline: .now() + 10) { hold.release() }
        defer { hold.release() }
        let start = ContinuousClock.now
        let error = await #expect(throws: TransportFailure.self) {
            try await URLSessionTransport.within(.milliseconds(200)) {
                await hold.wait()
                return 1
            }
        }
        #expect(error?.description.contains("no answer within") == true)
        let task = Task {
            try await URLSessionTransport.within(.seconds(600)) {
                await hold.wait()
                return 1
            }
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(ContinuousClock.now - start < .seconds(5), "answered after \(ContinuousClock.now - start)")
        // Work that ends in time gives its result.
        #expect(try await URLSessionTransport.within(.seconds(600)) { 7 } == 7)
    }
}
#endif

#if Server
/// What a transport carries — the sign-in token, a key — never reaches
/// a description, a dump or a mirror.
@Suite struct TransportRedactionTests {
    @Test func tokensAndKeysArePrintedNowhere() {
        let request = TransportRequest(
            method: "POST", url: URL(string: "https://keys.example.com/v1/keys/notes?device=phone")!,
            headers: [("Authorization", "Bearer SECRET-TOKEN"), ("DPoP", "SECRET-PROOF")], body: Data("{}".utf8),
            timeout: .seconds(1), maxResponseBytes: 10)
        let response = TransportResponse(
            status: 200, headers: [("Content-Type", "application/json")], body: Data(#"{"key":"SECRET-KEY"}"#.utf8))
        var dumped = ""
        dump(request, to: &dumped)
        dump(response, to: &dumped)
        let shown = [dumped, "\(request)", "\(response)", String(reflecting: request), String(reflecting: response)]
        for text in shown {
            #expect(!text.contains("SECRET"), "\(text)")
        }
        #expect("\(request)".contains("POST /v1/keys/notes") && "\(response)".contains("200"))
    }

    @Test func anOperatorsTokenIsPrintedNowhere() throws {
        let admin = try KeyServerAdmin(
            server: URL(string: "https://keys.example.com")!, operatorToken: "cofop_SECRET-OPERATOR-TOKEN")
        var dumped = ""
        dump(admin, to: &dumped)
        let mirrored = Mirror(reflecting: admin).children.map { "\($0.label ?? ""): \($0.value)" }.joined()
        for text in [dumped, "\(admin)", String(reflecting: admin), mirrored] {
            #expect(!text.contains("SECRET") && text.contains("keys.example.com"), "\(text)")
        }
    }
}

/// Work that waits, whatever cancellation says, until `release()`.
private final class Hold: Sendable {
    private let state = Locked<(released: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if !state.released { state.waiting.append(continuation) }
                return state.released
            }
            if now { continuation.resume() }
        }
    }

    func release() {
        let waiting = state.withLock { state in
            state.released = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
#endif
