#if Server
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird

/// Request bodies in, JSON answers out, for every controller.
enum JSONBody {
    /// The most a request body may hold.
    static let maxBytes = 16 * 1024

    /// A JSON body of at most ``maxBytes``, decoded strictly in one pass
    /// (``StrictBody``): an object with no member the route does not take
    /// and no null; an empty body is `emptyAs` when given.
    static func decode<T: RequestBody>(_ type: T.Type, _ request: Request, emptyAs empty: T? = nil) async throws -> T {
        var request = request
        let buffer = try await request.collectBody(upTo: maxBytes)
        if buffer.readableBytes == 0, let empty { return empty }
        do {
            return try JSONDecoder().decode(StrictBody<T>.self, from: Data(buffer.readableBytesView)).value
        } catch {
            throw KeyServerError(
                .bodyMalformed, "the request body is not a JSON object of \(T.members.sorted().joined(separator: ", "))"
            )
        }
    }

    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok, private: Bool = false)
        -> Response
    {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var headers: HTTPFields = [.contentType: "application/json"]
        if `private` { headers[.cacheControl] = "no-store" }
        return Response(
            status: status, headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: (try? encoder.encode(value)) ?? Data("{}".utf8))))
    }

    /// A route parameter (`:purpose`).
    static func parameter(_ name: String, _ context: KeyServerContext) throws -> String {
        guard let value = context.parameters.get(name) else {
            throw KeyServerError(.badRequest, "the route lacks its \(name)")
        }
        return value
    }
}
#endif
