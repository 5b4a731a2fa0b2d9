#if Server
import Coffer
import Foundation
import Glibc
import Testing

/// `POST /v1/service/keys` on `coffer-server` as built, over raw sockets
/// with a valid `keys:release` token: bodies truncated, cut short, too
/// large, nested too deep, not UTF-8, and a broken Authorization header.
/// Each is a 4xx (or, for a body that never comes, a closed connection),
/// never a 5xx and never a key; a good request afterwards still gets one.
/// (A body cut short by a half-closed connection was a 500 on every route
/// that reads one, until this test.)
@Suite(.serialized) struct ServiceKeyRawSocketTests {
    /// Everything the server sends until it closes (each request says
    /// `Connection: close`), or until `seconds` pass.
    static func answer(_ client: ClientLimitsTests.RawClient, within seconds: Double = 10) -> String {
        let end = Date().addingTimeInterval(seconds)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < end {
            var wanted = pollfd(fd: client.socket, events: Int16(POLLIN), revents: 0)
            guard poll(&wanted, 1, Int32(max(1, end.timeIntervalSinceNow * 1000))) > 0 else { continue }
            let count = read(client.socket, &buffer, buffer.count)
            guard count > 0 else { break }
            received += buffer[..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// A request's head: `body` is what Content-Length says unless `length` is given.
    static func head(
        token: String, length: Int, authorization: String? = nil, path: String = "/v1/service/keys"
    ) -> String {
        "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Authorization: \(authorization ?? "Bearer " + token)\r\nContent-Length: \(length)\r\n"
            + "Connection: close\r\n\r\n"
    }

    static func status(_ answer: String) -> Int? {
        let parts = answer.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1.1") else { return nil }
        return Int(parts[1])
    }

    @Test func hostileBodiesAndHeadersAreRefusedWithoutA5xx() throws {
        let issuer = try Issuer()
        let (data, token) = try ServerProcess.initialized(
            issuer: issuer, operator: "tenants", extra: ["--scope", "keys:release"])
        let server = try ServerProcess(issuer: issuer, data: data)
        defer { server.stop() }
        let good = #"{"subject": "acme", "purpose": "coffer-store-tenant"}"#
        let nested = String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000)
        let cases: [(name: String, head: String, body: [UInt8], shutWrite: Bool)] = [
            ("truncated JSON", Self.head(token: token, length: 28), Array(good.utf8.prefix(28)), false),
            ("a body cut short", Self.head(token: token, length: good.utf8.count), Array(good.utf8.prefix(20)), true),
            // The same on a user's route: every JSON body is read one way.
            (
                "a user's body cut short",
                Self.head(
                    token: try issuer.token("acme"), length: 40, path: "/v1/keys/coffer-store-tenant"),
                Array(#"{"device": "#.utf8), true
            ),
            (
                "two megabytes", Self.head(token: token, length: 2 << 20),
                Array(repeating: UInt8(ascii: " "), count: 2 << 20), false
            ),
            (
                "nested 5,000 deep (under the size limit)", Self.head(token: token, length: nested.utf8.count),
                Array(nested.utf8), false
            ),
            ("not UTF-8", Self.head(token: token, length: 8), [0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x3A, 0x31, 0x7D], false),
            ("an empty body", Self.head(token: token, length: 0), [], false),
            (
                "a bearer with no token", Self.head(token: token, length: good.utf8.count, authorization: "Bearer"),
                Array(good.utf8), false
            ),
            (
                "a token cut short", Self.head(token: String(token.dropLast(5)), length: good.utf8.count),
                Array(good.utf8), false
            ),
        ]
        for (name, head, body, shutWrite) in cases {
            let client = try ClientLimitsTests.RawClient(port: server.port)
            client.send(head)
            // MSG_NOSIGNAL: the server may answer and close before the
            // 2 MiB are all sent, which must be EPIPE here, not SIGPIPE.
            _ = body.withUnsafeBufferPointer {
                Glibc.send(client.socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if shutWrite { shutdown(client.socket, Int32(SHUT_WR)) }
            let answer = Self.answer(client)
            let status = Self.status(answer)
            if shutWrite && status == nil {
                #expect(answer.isEmpty, "\(name): \(answer)")  // closed with nothing sent: no key
            } else if shutWrite {
                #expect(status == 400 && answer.contains("body-malformed"), "\(name): \(answer.prefix(300))")
            } else {
                #expect(status.map { (400..<500).contains($0) } == true, "\(name): \(answer.prefix(200))")
            }
            #expect(!answer.contains("\"key\""), "\(name) released a key")
        }
        let client = try ClientLimitsTests.RawClient(port: server.port)
        client.send(Self.head(token: token, length: good.utf8.count) + good)
        let answer = Self.answer(client)
        #expect(Self.status(answer) == 200 && answer.contains("\"key\""), "\(answer.prefix(300))")
    }
}
#endif
