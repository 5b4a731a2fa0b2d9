#if Server
import InMemoryTracing
import Instrumentation
import Testing
import Tracing

/// Every key server these suites run in their own process runs with a
/// tracer (issue 59: the earlier suites with tracing on, and under
/// ThreadSanitizer): swift-distributed-tracing's in-memory tracer, beside
/// the app's instrument that TraceTests' client needs. The servers they
/// spawn run with tracing off, but for TraceTests'.
enum TestTracing {
    static let tracer = InMemoryTracer(recordInjections: false, recordExtractions: false)
    /// Once per process: a second bootstrap is a crash.
    static let bootstrapped: Void = InstrumentationSystem.bootstrap(
        MultiplexInstrument([TraceTests.AppInstrument(), tracer]))

    /// Takes the spans finished so far (by any suite's server) and fails
    /// the test if one carries a sign-in token (a JWT's `eyJ` start) or an
    /// error's recorded text. AsyncHTTPClient's own client spans (the
    /// tests' requests, which record their errors) are not the server's.
    static func check(sourceLocation: SourceLocation = #_sourceLocation) {
        for span in tracer.popFinishedSpans() where span.kind != .client {
            var texts = [span.operationName]
            span.attributes.forEach { name, value in texts.append("\(name)=\(value)") }
            for text in texts where text.contains("eyJ") {
                Issue.record("the span \(span.operationName) carries a token", sourceLocation: sourceLocation)
            }
            if !span.errors.isEmpty || !span.events.isEmpty {
                Issue.record(
                    "the span \(span.operationName) recorded an error or an event", sourceLocation: sourceLocation)
            }
        }
    }
}
#endif
