#if Server
import Coffer
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// G6 (security review 3): idle sockets, headers sent a byte at a time and
/// bodies that never end neither hold the server nor lock others out.
/// Raw sockets on `coffer-server` as built, with short timeouts.
@Suite(.serialized) struct ClientLimitsTests {
    /// A TCP connection to 127.0.0.1:`port`, written and read as bytes.
    final class RawClient {
        let socket: Int32

        init(port: Int) throws {
            socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                close(socket)
                throw CofferError(.io, "connect: \(String(cString: strerror(errno)))")
            }
        }

        deinit { close(socket) }

        func send(_ text: String) {
            _ = text.utf8CString.withUnsafeBufferPointer { write(socket, $0.baseAddress, $0.count - 1) }
        }

        /// Whether `marker` arrived within `seconds` (a response's last bytes).
        func received(_ marker: String, within seconds: Double) -> Bool {
            let end = Date().addingTimeInterval(seconds)
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while Date() < end {
                var wanted = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                guard poll(&wanted, 1, Int32(max(1, end.timeIntervalSinceNow * 1000))) > 0 else { continue }
                let count = read(socket, &buffer, buffer.count)
                guard count > 0 else { return false }
                received += buffer[..<count]
                if String(decoding: received, as: UTF8.self).contains(marker) { return true }
            }
            return false
        }

        /// Whether the server closed the connection (reading what it sent
        /// before, a response for instance) within `seconds`.
        func closedByServer(within seconds: Double) -> Bool {
            let end = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while Date() < end {
                var wanted = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                let remaining = Int32(max(1, end.timeIntervalSinceNow * 1000))
                guard poll(&wanted, 1, remaining) > 0 else { continue }
                let count = read(socket, &buffer, buffer.count)
                if count <= 0 { return true }
            }
            return false
        }
    }

    static func server(_ limits: [String]) throws -> ServerProcess {
        let issuer = try Issuer()
        return try ServerProcess(issuer: issuer, data: issuer.folder + "/data", extra: limits)
    }

    /// 100 idle sockets against a limit of 40: each new one closes the
    /// longest-idle, a request still gets through at once, and every idle
    /// socket is closed by the idle timeout.
    ///
    /// The first 30 become idle in a known order: each asks once and has
    /// its answer before the next opens. The 70 after them never send a
    /// byte; the server's two event loops may admit those in another order
    /// than they connected, so only their count of evictions is exact
    /// enough to check. A close is awaited up to a deadline, not a fixed
    /// 50 ms per socket (ThreadSanitizer slows the event loops).
    @Test func idleSocketsNeitherStopServiceNorStayOpen() async throws {
        // Every socket is from 127.0.0.1: the per-address cap is lifted here (ConnectionCapTests has it).
        let server = try Self.server([
            "--idle-timeout", "3", "--max-connections", "40", "--max-connections-per-address", "200",
        ])
        defer { server.stop() }
        let answered = try (0..<30).map { _ in
            let client = try RawClient(port: server.port)
            client.send("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(client.received("\"ok\"}", within: 10), "a health check on its own connection went unanswered")
            return client
        }
        let silent = try (0..<70).map { _ in try RawClient(port: server.port) }
        // 101 connections with this request's: 61 past the limit, the 30 answered ones first.
        let (status, _) = try await server.address.request("/v1/health", method: "GET", token: "")
        #expect(status == 200)
        let deadline = Date().addingTimeInterval(1)
        let closed = { (client: RawClient) in client.closedByServer(within: max(0.01, deadline.timeIntervalSinceNow)) }
        let evicted = answered.filter(closed).count
        #expect(evicted == 30, "the longest-idle sockets were closed for newer ones: \(evicted) of 30")
        let evictedSilent = silent.filter(closed).count
        #expect(evictedSilent >= 31, "\(evictedSilent) of the silent sockets were closed for newer ones, not 31")
        try await Task.sleep(for: .seconds(3.5))
        let open = (answered + silent).filter { !$0.closedByServer(within: 0.01) }.count
        #expect(open == 0, "\(open) idle sockets outlived the idle timeout")
        let (again, _) = try await server.address.request("/v1/health", method: "GET", token: "")
        #expect(again == 200)
    }

    /// Headers a byte every 0.3 s never become a request: closed by the
    /// idle timeout. A body a byte every 0.3 s: closed by the request timeout.
    @Test func slowHeadersAndSlowBodiesAreClosed() async throws {
        let server = try Self.server(["--idle-timeout", "1.5", "--request-timeout", "1"])
        defer { server.stop() }
        let headers = "GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + String(repeating: "a", count: 40)
        let slowHeaders = try RawClient(port: server.port)
        let body = try RawClient(port: server.port)
        body.send("POST /v1/keys/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n")
        let start = Date()
        var headersClosed: Double?
        var bodyClosed: Double?
        for byte in headers where headersClosed == nil || bodyClosed == nil {
            if headersClosed == nil {
                slowHeaders.send(String(byte))
                if slowHeaders.closedByServer(within: 0.15) { headersClosed = Date().timeIntervalSince(start) }
            }
            if bodyClosed == nil {
                body.send("x")
                if body.closedByServer(within: 0.15) { bodyClosed = Date().timeIntervalSince(start) }
            }
        }
        #expect(
            headersClosed.map { $0 < 3 } == true, "slow headers closed after \(String(describing: headersClosed)) s")
        #expect(bodyClosed.map { $0 < 2.5 } == true, "a slow body closed after \(String(describing: bodyClosed)) s")
        let (status, _) = try await server.address.request("/v1/health", method: "GET", token: "")
        #expect(status == 200)
    }

    @Test func badLimitsAreRefused() throws {
        for bad in [["--idle-timeout", "0"], ["--request-timeout", "-1"], ["--max-connections", "0"]] {
            #expect(throws: (any Error).self, "\(bad)") { _ = try Self.server(bad) }
        }
    }
}
#endif
