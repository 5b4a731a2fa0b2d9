#if Server
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird

/// Request bodies in, JSON answers out, for every controller.
package enum JSONBody {
    /// The most a request body may hold.
    static let maxBytes = 16 * 1024

    /// A JSON body of at most ``maxBytes``, decoded strictly in one pass
    /// (``StrictBody``): an object with no member the route does not take
    /// and no null; an empty body is `emptyAs` when given.
    static func decode<T: RequestBody>(_ type: T.Type, _ request: Request, emptyAs empty: T? = nil) async throws -> T {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: maxBytes)
        } catch let error as any HTTPResponseError {
            throw error  // too large: 413
        } catch {
            // The client stopped sending before the length its head gave
            // (the connection half-closed): its request, not the server, failed.
            throw KeyServerError(.bodyMalformed, "the request body ended before the length its headers gave")
        }
        if buffer.readableBytes == 0, let empty { return empty }
        return try decode(T.self, bytes: Data(buffer.readableBytesView))
    }

    /// `bytes` as a `T`, strictly (``StrictBody``), or a 400 problem.
    static func decode<T: RequestBody>(_ type: T.Type, bytes: Data) throws -> T {
        do {
            return try JSONDecoder().decode(StrictBody<T>.self, from: bytes).value
        } catch {
            throw KeyServerError(
                .bodyMalformed, "the request body is not a JSON object of \(T.members.sorted().joined(separator: ", "))"
            )
        }
    }

    /// `bytes` read as every request body the server takes: for the fuzzer
    /// (fuzz/run.sh), which cannot name the internal body types. Returns
    /// how many decoded; a refusal other than the server's own 400
    /// (`bodyMalformed`, or `invalidStoreAnchor` for a state's numbers) is
    /// thrown.
    package static func decodeEveryBody(_ bytes: Data) throws -> Int {
        let decoders: [(Data) throws -> Any] = [
            { try decode(KeyRequest.self, bytes: $0) }, { try decode(BatchRequest.self, bytes: $0) },
            { try decode(RotateRequest.self, bytes: $0) }, { try decode(RetireRequest.self, bytes: $0) },
            { try decode(DevTokenRequest.self, bytes: $0) }, { try decode(UndoShredRequest.self, bytes: $0) },
            { try decode(ShredRequest.self, bytes: $0) }, { try decode(StoreAnchorRequest.self, bytes: $0).state() },
        ]
        var decoded = 0
        for decoder in decoders {
            do {
                _ = try decoder(bytes)
                decoded += 1
            } catch let error as KeyServerError where [.bodyMalformed, .invalidStoreAnchor].contains(error.code) {}
        }
        return decoded
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
