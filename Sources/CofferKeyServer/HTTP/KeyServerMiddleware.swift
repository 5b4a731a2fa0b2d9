#if Server
import Coffer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Tracing

/// Gives every response an `X-Request-Id`, turns every error into a
/// problem document (never a bare 500 page, never an error's own text
/// unless it is a `KeyServerError` or a `Problem`), and logs one line per
/// request at `info`: method, route (the pattern, `/v1/keys/{purpose}`,
/// so that no purpose or store id is written), status, duration and
/// request id — never a header, a body, a query or a subject. The same
/// request is one server span (``ServerSpan`` says what spans carry),
/// joined to the caller's trace when it sends a W3C `traceparent`.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    static var requestIDField: HTTPField.Name { HTTPField.Name("X-Request-Id")! }
    /// The routes, for `405` and its `Allow` header.
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let id = Hex.encode(withUnsafeBytes(of: UInt64.random(in: 0...UInt64.max)) { Array($0) })
        let start = ContinuousClock.now
        // The request's span, in the trace its `traceparent` names, if any.
        var trace = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &trace, using: TraceHeaders())
        let span = startSpan("\(request.method) unmatched", context: trace, ofKind: .server)
        var (response, outcome) = await ServiceContext.$current.withValue(span.context) {
            await respond(request, context: context, id: id, next: next)
        }
        response.headers[Self.requestIDField] = id
        let elapsed = ContinuousClock.now - start
        let route = context.endpointPath.map(Self.route) ?? "unmatched"
        span.operationName = "\(request.method) \(route)"
        span.attributes["http.request.method"] = request.method.rawValue
        span.attributes["http.route"] = route
        span.attributes["http.response.status_code"] = Int(response.status.code)
        span.attributes["coffer.outcome"] = outcome
        span.attributes["coffer.request_id"] = id
        if response.status.code >= 500 { span.setStatus(SpanStatus(code: .error)) }
        span.end()
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

    /// The route's answer, every error made a problem, and the outcome's
    /// stable code (`ok` for an answer that is not a problem).
    private func respond(
        _ request: Request, context: Context, id: String, next: (Request, Context) async throws -> Response
    ) async -> (Response, String) {
        do {
            return (try await next(request, context), "ok")
        } catch let error as KeyServerError {
            return (Problem(error).response(requestID: id), error.code.name)
        } catch let problem as Problem {
            return (problem.response(requestID: id), problem.code)
        } catch let error as any HTTPResponseError {
            if error.status == .notFound, let allowed = routes.methods(of: request.uri.path) {
                var problem = Problem(
                    .methodNotAllowed, "method-not-allowed",
                    "\(request.uri.path) takes \(allowed), not \(request.method)")
                problem.headers[.allow] = allowed
                return (problem.response(requestID: id), problem.code)
            }
            let problem = Self.problem(for: error.status)
            return (problem.response(requestID: id), problem.code)
        } catch {
            context.logger.error(
                "request failed", metadata: ["request.id": "\(id)", "error.type": "\(type(of: error))"])
            let problem = Problem(
                .internalServerError, "internal-error", "the server failed; the request id names it in its log")
            return (problem.response(requestID: id), problem.code)
        }
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
/// Reads the trace context's fields (`traceparent`, `tracestate`) from a
/// request's headers for whichever propagator the tracer uses.
struct TraceHeaders: Extractor {
    func extract(key: String, from carrier: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { carrier[$0] }
    }
}
#endif
