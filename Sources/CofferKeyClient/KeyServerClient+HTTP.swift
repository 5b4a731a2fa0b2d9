import Coffer
import Crypto
import Foundation

/// One request to a key server: a bearer token, an optional JSON body; a
/// 2xx answer's JSON object, or the problem document's code as the error.
struct KeyServerCall {
    /// Refuses a server URL that is not https, but for http to a loopback
    /// address written as one (`127.0.0.1`, `::1`, `localhost`): a token
    /// never goes over the network in the clear. Checked before any
    /// connection, by the user's client and the operator's alike.
    static func checkTransport(_ server: URL) throws {
        guard server.scheme == "https" || (server.scheme == "http" && Loopback.isHost(server.host)) else {
            throw KeyClientError(.invalidArgument, "the key server must be https (http only on loopback)")
        }
    }

    let server: URL
    let transport: any KeyServerTransport
    let timeout: Duration
    /// With a DPoP key, every request carries a proof, and the server's
    /// nonce is kept here for the next one.
    var dpop: DPoPKey? = nil
    var nonce: Locked<String?>? = nil
    var now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }

    func send(_ path: String, method: String, token: String, body: [String: Any]? = nil) async throws -> (
        status: Int, object: [String: Any]
    ) {
        do {
            return try await sendOnce(path, method: method, token: token, body: body)
        } catch let error as KeyClientError where error.code == .init("dpop-nonce-required") && dpop != nil {
            // The server issued a new nonce (the first request, or the old one aged): once more with it.
            return try await sendOnce(path, method: method, token: token, body: body)
        }
    }

    func sendOnce(_ path: String, method: String, token: String, body: [String: Any]?) async throws -> (
        status: Int, object: [String: Any]
    ) {
        let url = server.absoluteString.trimmingSuffix("/") + path
        guard let target = URL(string: url) else {
            throw KeyClientError(.invalidArgument, "the request's path is not a URL")
        }
        var headers: [(name: String, value: String)] = []
        if let dpop {
            headers.append(("Authorization", "DPoP \(token)"))
            headers.append(
                (
                    "DPoP",
                    try dpop.proof(method: method, url: url, token: token, nonce: nonce?.withLock { $0 }, now: now())
                )
            )
        } else {
            headers.append(("Authorization", "Bearer \(token)"))
        }
        headers.append(("Accept", "application/json"))
        var data: Data?
        if let body {
            headers.append(("Content-Type", "application/json"))
            data = try JSONSerialization.data(withJSONObject: body)
        }
        let response: TransportResponse
        do {
            response = try await transport.send(
                TransportRequest(
                    method: method, url: target, headers: headers, body: data, timeout: timeout,
                    maxResponseBytes: KeyServerClient.maxResponseBytes))
        } catch let failure as TransportFailure where failure.answerTooLarge {
            throw KeyClientError(.malformedResponse, "the server's answer is too large")
        } catch {
            throw KeyClientError(
                .unreachable, "the key server did not answer: \(URLSessionTransport.reason(error))")
        }
        guard response.body.count <= KeyServerClient.maxResponseBytes else {
            throw KeyClientError(.malformedResponse, status: response.status, "the server's answer is too large")
        }
        let status = response.status
        if let fresh = response.header("DPoP-Nonce"), fresh.utf8.count <= 256 { nonce?.withLock { $0 = fresh } }
        let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        guard (200..<300).contains(status) else {
            guard let code = object?["code"] as? String else {
                throw KeyClientError(
                    .malformedResponse, status: status, "the server answered without a problem document")
            }
            throw KeyClientError(
                .init(code), status: status, (object?["detail"] as? String).map { String($0.prefix(500)) } ?? code)
        }
        return (status, object ?? [:])
    }
}

extension KeyServerClient {
    var requests: KeyServerCall {
        KeyServerCall(server: server, transport: transport, timeout: timeout, dpop: dpop, nonce: dpopNonce, now: now)
    }

    /// One key request; the answer must be a key of `purpose`.
    func fetch(path: String, method: String, body: [String: Any]?, purpose: String) async throws -> ServerKey {
        let object = try await requests.send(path, method: method, token: try await token(), body: body).object
        guard object["purpose"] as? String == purpose, let version = object["version"] as? Int, version >= 1,
            let keyID = object["keyId"] as? String, keyID.count == 16, Hex.decode(keyID) != nil,
            let encoded = object["key"] as? String, let key = Data(base64Encoded: encoded), key.count == 32
        else { throw KeyClientError(.malformedResponse, status: 200, "the server's answer is not a key of \(purpose)") }
        return ServerKey(
            purpose: purpose, version: version, keyID: keyID, key: SymmetricKey(data: key), fromCache: false)
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
