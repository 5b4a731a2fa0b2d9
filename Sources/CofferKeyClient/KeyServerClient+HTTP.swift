import AsyncHTTPClient
import Coffer
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

extension KeyServerClient {
    /// One request; a 200 must be a key of `purpose`, anything else a
    /// problem document, whose code becomes the error's.
    func fetch(path: String, method: HTTPMethod, body: Data?, purpose: String) async throws -> ServerKey {
        var request = HTTPClientRequest(url: server.absoluteString.trimmingSuffix("/") + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(try await token())")
        request.headers.add(name: "Accept", value: "application/json")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let status: Int
        let bytes: ByteBuffer
        do {
            let response = try await http.execute(request, timeout: .seconds(timeout))
            status = Int(response.status.code)
            bytes = try await response.body.collect(upTo: Self.maxResponseBytes)
        } catch {
            throw KeyClientError(.unreachable, "the key server did not answer (\(type(of: error)))")
        }
        let object = (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView))) as? [String: Any]
        guard status == 200 else {
            guard let code = object?["code"] as? String else {
                throw KeyClientError(
                    .malformedResponse, status: status, "the server answered without a problem document")
            }
            throw KeyClientError(
                .init(code), status: status, (object?["detail"] as? String).map { String($0.prefix(500)) } ?? code)
        }
        guard let object, object["purpose"] as? String == purpose, let version = object["version"] as? Int,
            version >= 1, let keyID = object["keyId"] as? String, keyID.count == 16, Hex.decode(keyID) != nil,
            let encoded = object["key"] as? String, let key = Data(base64Encoded: encoded), key.count == 32
        else {
            throw KeyClientError(.malformedResponse, status: status, "the server's answer is not a key of \(purpose)")
        }
        return ServerKey(
            purpose: purpose, version: version, keyID: keyID, key: SymmetricKey(data: key), fromCache: false)
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}
