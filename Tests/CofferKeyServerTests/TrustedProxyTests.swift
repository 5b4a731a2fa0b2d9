#if Server
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Behind a load balancer (security review 4, H3): the address limit
/// counts the client a trusted proxy names in `X-Forwarded-For`, and only
/// when the peer is a configured trusted proxy; anyone else's header is
/// ignored, so it cannot buy a fresh bucket per request.
@Suite(.serialized) struct TrustedProxyTests {
    static func fetch(_ server: ServerProcess, token: String, forwardedFor: String) async throws -> Int {
        var request = HTTPClientRequest(url: server.url + "/v1/keys/notes")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "X-Forwarded-For", value: forwardedFor)
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(20))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }

    @Test func theForwardedClientIsCountedOnlyBehindATrustedProxy() async throws {
        let issuer = try Issuer()
        let token = try issuer.token("pat")
        let limit = ["--address-rate-limit", "2/60"]
        var server = try ServerProcess(
            issuer: issuer, data: issuer.folder + "/data", extra: limit + ["--trusted-proxy", "127.0.0.0/8"])
        var statuses: [Int] = []
        for client in ["203.0.113.1", "203.0.113.1", "203.0.113.1", "203.0.113.2", "198.51.100.9, 203.0.113.3"] {
            statuses.append(try await Self.fetch(server, token: token, forwardedFor: client))
        }
        // Each client its own bucket: the third from .1 is refused, .2 and .3 are not.
        #expect(statuses == [200, 200, 429, 200, 200], "\(statuses)")
        server.stop()

        server = try ServerProcess(
            issuer: issuer, data: issuer.folder + "/data", extra: limit + ["--trusted-proxy", "10.0.0.0/8"])
        defer { server.stop() }
        statuses = []
        for client in ["203.0.113.4", "203.0.113.5", "203.0.113.6"] {
            statuses.append(try await Self.fetch(server, token: token, forwardedFor: client))
        }
        // 127.0.0.1 is no trusted proxy here: its header is ignored, every request is its own.
        #expect(statuses == [200, 200, 429], "\(statuses)")
    }
}
#endif
