#if Server
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird

/// An error as the key server answers it: an RFC 9457 problem document
/// (`application/problem+json`) whose `code` is stable and documented in
/// docs/openapi.yaml. `detail` is for people and never holds a key, a
/// token or anything read from one but the claim names.
public struct Problem: Error, HTTPResponseError, Sendable, CustomStringConvertible {
    public let status: HTTPResponse.Status
    /// Stable, machine-readable: `token-expired`, `key-shredded`, …
    public let code: String
    public let detail: String
    /// Extra response headers (`WWW-Authenticate` on a 401).
    public var headers: HTTPFields = [:]

    public init(_ status: HTTPResponse.Status, _ code: String, _ detail: String) {
        self.status = status
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(status.code) \(code): \(detail)" }

    /// The document's fields, in the order RFC 9457 lists them.
    struct Document: Codable {
        let type: String
        let title: String
        let status: Int
        let detail: String
        let code: String
        let requestId: String?
    }

    func document(requestID: String?) -> Document {
        Document(
            type: "https://coffer.dev/problems/\(code)", title: status.reasonPhrase, status: status.code,
            detail: detail, code: code, requestId: requestID)
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response(requestID: nil)
    }

    func response(requestID: String?) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(document(requestID: requestID))) ?? Data()
        var fields = headers
        fields[.contentType] = "application/problem+json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The problem document of a domain error: the status and headers its
    /// kind calls for (`WWW-Authenticate` on a 401, `Retry-After` on a 429
    /// or 503), its code and detail unchanged.
    public init(_ error: KeyServerError) {
        switch error.kind {
        case .invalidInput: self.init(.badRequest, error.code.name, error.detail)
        case .unauthenticated:
            self.init(.unauthorized, error.code.name, error.detail)
            headers[.wwwAuthenticate] = "Bearer error=\"invalid_token\""
        case .proofRefused:
            self.init(.unauthorized, error.code.name, error.detail)
            headers[.wwwAuthenticate] = "DPoP error=\"invalid_dpop_proof\", algs=\"ES256\""
        case .forbidden: self.init(.forbidden, error.code.name, error.detail)
        case .notFound: self.init(.notFound, error.code.name, error.detail)
        case .conflict: self.init(.conflict, error.code.name, error.detail)
        case .gone: self.init(.gone, error.code.name, error.detail)
        case .rateLimited:
            self.init(.tooManyRequests, error.code.name, error.detail)
            headers[.retryAfter] = String(max(1, error.retryAfter ?? 1))
        case .unavailable:
            self.init(.serviceUnavailable, error.code.name, error.detail)
            headers[.retryAfter] = "1"
        case .failed: self.init(.internalServerError, error.code.name, error.detail)
        }
    }
}
#endif
