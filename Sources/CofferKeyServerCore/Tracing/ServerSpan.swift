#if Server
import Tracing

/// The key server's spans (docs/key-server-operating.md, "Traces"): what
/// each one is named and may carry. They go to whatever tracer the process
/// bootstrapped (`coffer-server serve --otel-endpoint`); with none, each is
/// a no-op that costs a lookup.
///
/// A span carries routes as patterns, statuses, outcome codes and counts,
/// and nothing a request names: no token, subject, key name, purpose,
/// device, store id or address. An error is never recorded as it is (its
/// text may name what it refused); its stable code goes in
/// `coffer.outcome` instead.
package enum ServerSpan {
    /// Runs `body` in a span named `name`, a child of the task's trace
    /// context, which the span becomes for the calls inside `body`.
    package static func run<T>(
        _ name: String, isolation: isolated (any Actor)? = #isolation,
        _ body: (any Span) async throws -> T
    ) async throws -> T {
        let span = startSpan(name, context: ServiceContext.current ?? .topLevel, ofKind: .internal)
        defer { span.end() }
        do {
            return try await ServiceContext.$current.withValue(span.context) { try await body(span) }
        } catch {
            failed(span, error)
            throw error
        }
    }

    /// A span that has already happened, from `start` to `end`, as a child
    /// of the task's trace context: the batch's transaction, seen from each
    /// request it carried.
    package static func record(
        _ name: String, from start: DefaultTracerClock.Instant, to end: DefaultTracerClock.Instant,
        attributes: SpanAttributes
    ) {
        let span = startSpan(name, context: ServiceContext.current ?? .topLevel, ofKind: .internal, at: start)
        span.attributes = attributes
        span.end(at: end)
    }

    /// Marks `span` failed with `error`'s stable code, never its text.
    package static func failed(_ span: any Span, _ error: any Error) {
        span.attributes["coffer.outcome"] = outcome(error)
        span.setStatus(SpanStatus(code: .error))
    }

    /// A code that names what went wrong and nothing the request carried.
    package static func outcome(_ error: any Error) -> String {
        if let error = error as? KeyServerError { return error.code.name }
        if error is CancellationError { return "cancelled" }
        return "\(type(of: error))"
    }
}
#endif
