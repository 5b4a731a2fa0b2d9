import Coffer
import Crypto
import Foundation
import Instrumentation

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

    /// Sends `body` (none when nil) and reads a 2xx answer as `Answer`
    /// (``KeyServerBody/Empty`` for none); any other answer's problem
    /// document is the error.
    func send<Answer: Decodable>(
        _ path: String, method: String, token: String, body: (any Encodable & Sendable)? = nil,
        answer: Answer.Type
    ) async throws -> Answer {
        let data = try body.map { try JSONEncoder().encode($0) }
        let answer: Data
        do {
            answer = try await sendOnce(path, method: method, token: token, body: data)
        } catch let error as KeyClientError where error.code == .init("dpop-nonce-required") && dpop != nil {
            // The server issued a new nonce (the first request, or the old one aged): once more with it.
            answer = try await sendOnce(path, method: method, token: token, body: data)
        }
        if Answer.self == KeyServerBody.Empty.self, let empty = KeyServerBody.Empty() as? Answer { return empty }
        do {
            return try JSONDecoder().decode(Answer.self, from: answer)
        } catch {
            throw KeyClientError(.malformedResponse, status: 200, "the server's answer is not its API's \(Answer.self)")
        }
    }

    /// One exchange: the 2xx answer's body, or the problem as the error.
    func sendOnce(_ path: String, method: String, token: String, body: Data?) async throws -> Data {
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
        if body != nil { headers.append(("Content-Type", "application/json")) }
        // The app's trace context, as its instrument writes it (a W3C
        // `traceparent` with OpenTelemetry), so that the server's spans
        // join the app's trace; nothing when the app has none.
        if let context = ServiceContext.current {
            InstrumentationSystem.instrument.inject(context, into: &headers, using: TraceFields())
        }
        let response: TransportResponse
        do {
            response = try await transport.send(
                TransportRequest(
                    method: method, url: target, headers: headers, body: body, timeout: timeout,
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
        guard (200..<300).contains(status) else {
            guard let problem = try? JSONDecoder().decode(KeyServerBody.Problem.self, from: response.body) else {
                throw KeyClientError(
                    .malformedResponse, status: status, "the server answered without a problem document")
            }
            throw KeyClientError(.init(problem.code), status: status, String(problem.detail.prefix(500)))
        }
        return response.body
    }
}

extension KeyServerClient {
    var requests: KeyServerCall {
        KeyServerCall(server: server, transport: transport, timeout: timeout, dpop: dpop, nonce: dpopNonce, now: now)
    }

    /// One key request; the answer must be a key of `purpose`.
    func fetch(path: String, method: String, body: KeyServerBody.KeyRequest?, purpose: String) async throws
        -> ServerKey
    {
        let answer = try await requests.send(
            path, method: method, token: try await token(), body: body, answer: KeyServerBody.Key.self)
        guard answer.purpose == purpose, answer.version >= 1, answer.keyId.count == 16,
            Hex.decode(answer.keyId) != nil, let key = Data(base64Encoded: answer.key), key.count == 32
        else { throw KeyClientError(.malformedResponse, status: 200, "the server's answer is not a key of \(purpose)") }
        guard (answer.cacheSeconds ?? 0) >= 0 else {
            throw KeyClientError(.malformedResponse, status: 200, "the server's cacheSeconds is negative")
        }
        return ServerKey(
            purpose: purpose, version: answer.version, keyID: answer.keyId, key: SymmetricKey(data: key),
            fromCache: false, cacheSeconds: answer.cacheSeconds)
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}

/// Writes a trace context's fields as request headers.
struct TraceFields: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [(name: String, value: String)]) {
        carrier.append((key, value))
    }
}
