#if Server
import Coffer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Gives every response an `X-Request-Id`, turns every error into a
/// problem document (never a bare 500 page, never an error's own text
/// unless it is a `KeyServerError` or a `Problem`), and logs one line per
/// request at `info`: method, route (the pattern, `/v1/keys/{purpose}`,
/// so that no purpose or store id is written), status, duration and
/// request id — never a header, a body, a query or a subject.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    static var requestIDField: HTTPField.Name { HTTPField.Name("X-Request-Id")! }
    /// The routes, for `405` and its `Allow` header.
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let id = Hex.encode(withUnsafeBytes(of: UInt64.random(in: 0...UInt64.max)) { Array($0) })
        let start = ContinuousClock.now
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as KeyServerError {
            response = Problem(error).response(requestID: id)
        } catch let problem as Problem {
            response = problem.response(requestID: id)
        } catch let error as any HTTPResponseError {
            if error.status == .notFound, let allowed = routes.methods(of: request.uri.path) {
                var problem = Problem(
                    .methodNotAllowed, "method-not-allowed",
                    "\(request.uri.path) takes \(allowed), not \(request.method)")
                problem.headers[.allow] = allowed
                response = problem.response(requestID: id)
            } else {
                response = Self.problem(for: error.status).response(requestID: id)
            }
        } catch {
            context.logger.error(
                "request failed", metadata: ["request.id": "\(id)", "error.type": "\(type(of: error))"])
            response = Problem(
                .internalServerError, "internal-error", "the server failed; the request id names it in its log"
            )
            .response(requestID: id)
        }
        response.headers[Self.requestIDField] = id
        let elapsed = ContinuousClock.now - start
        let route = context.endpointPath.map(Self.route) ?? "unmatched"
        context.logger.info(
            "\(request.method) \(route) \(response.status.code)",
            metadata: [
                "request.id": "\(id)", "http.method": "\(request.method)", "http.route": "\(route)",
                "http.status": "\(response.status.code)",
                "duration.ms":
                    "\(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)",
            ])
        return response
    }

    /// Hummingbird's route pattern as OpenAPI writes it: `/v1/keys/{purpose}`.
    /// Anything else (Hummingbird's `NotFound` for no route) is `unmatched`.
    static func route(_ pattern: String) -> String {
        guard pattern.hasPrefix("/") else { return "unmatched" }
        let segments = pattern.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            segment.hasPrefix(":") ? "{" + segment.dropFirst() + "}" : segment
        }
        return segments.joined(separator: "/")
    }

    /// Hummingbird's own refusals (no route, wrong method, body too big…)
    /// as problems with stable codes.
    static func problem(for status: HTTPResponse.Status) -> Problem {
        switch status {
        case .notFound: Problem(.notFound, "not-found", "no such route")
        case .methodNotAllowed: Problem(.methodNotAllowed, "method-not-allowed", "the route does not take this method")
        case .contentTooLarge: Problem(.contentTooLarge, "body-too-large", "the request body is too large")
        case .badRequest: Problem(.badRequest, "bad-request", "the request is malformed")
        default:
            status.code >= 500
                ? Problem(
                    .internalServerError, "internal-error", "the server failed; the request id names it in its log")
                : Problem(status, "http-\(status.code)", status.reasonPhrase)
        }
    }
}
#endif
