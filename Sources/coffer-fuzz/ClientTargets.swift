import Coffer
import CofferKeyClient
import Foundation

/// The key client reading a server's answers: keys, key information,
/// shredding receipts, store anchors and problem documents, with the
/// headers a server sends (a DPoP nonce, a retry time).
enum ClientTargets {
    static let all: [FuzzTarget] = [answers]

    /// Answers every request with the fuzzed status, headers and body.
    struct Replay: KeyServerTransport {
        let response: TransportResponse
        func send(_ request: TransportRequest) async throws -> TransportResponse { response }
    }

    static let statuses = [200, 201, 204, 301, 400, 401, 403, 404, 409, 413, 429, 500, 503]

    @Sendable static func isClient(_ error: any Error) -> Bool { error is KeyClientError || error is CofferError }

    /// The first byte picks the status, the second the headers; the rest
    /// is the body.
    static let answers = FuzzTarget(
        name: "client-answers", summary: "the key client reading a server's answers",
        run: { bytes in
            guard bytes.count >= 2 else { return }
            var headers: [(name: String, value: String)] = []
            if bytes[1] & 1 != 0 { headers.append(("Content-Type", "application/problem+json")) }
            if bytes[1] & 2 != 0 { headers.append(("DPoP-Nonce", "n-\(bytes[1])")) }
            if bytes[1] & 4 != 0 { headers.append(("WWW-Authenticate", #"DPoP error="use_dpop_nonce""#)) }
            if bytes[1] & 8 != 0 { headers.append(("Retry-After", "\(bytes[1] >> 4)")) }
            let transport = Replay(
                response: TransportResponse(
                    status: statuses[Int(bytes[0]) % statuses.count], headers: headers, body: Data(bytes.dropFirst(2))))
            let server = URL(string: "https://keys.example")!
            FuzzTarget.expect("KeyServerClient", isClient) {
                let client = try KeyServerClient(
                    server: server, account: "alice", token: { "a.token.here" }, transport: transport,
                    dpop: bytes[1] & 16 != 0 ? DPoPKey() : nil)
                _ = try await client.currentKey(purpose: "notes")
            }
            FuzzTarget.expect("KeyServerAdmin", isClient) {
                let admin = try KeyServerAdmin(server: server, operatorToken: "cofop_fuzz", transport: transport)
                switch bytes[1] >> 5 {
                case 0: _ = try await admin.rotate(subject: "alice", purpose: "notes")
                case 1: _ = try await admin.shred(subject: "alice", undoWindow: 60)
                case 2: try await admin.undoShred(subject: "alice")
                default: _ = try await admin.storeAnchor(store: "0123456789abcdef0123456789abcdef")
                }
            }
        },
        seeds: {
            let key = Data(repeating: 3, count: 32).base64EncodedString()
            return [
                [0, 0]
                    + Array(
                        #"{"cacheSeconds":300,"key":"\#(key)","keyId":"0011223344556677","purpose":"notes","version":1}"#
                            .utf8),
                [4, 1]
                    + Array(
                        #"{"type":"about:blank","title":"Bad","status":400,"code":"bodyMalformed","detail":"no"}"#.utf8),
                [0, 0b0110_0000]
                    + Array(#"{"epoch":1,"sequences":{},"digest":"\#(String(repeating: "0", count: 64))"}"#.utf8),
            ]
        })
}
