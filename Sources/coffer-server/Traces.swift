#if Server
import ArgumentParser
import Coffer
import Foundation
import Logging
import OTel
import ServiceLifecycle
import Tracing

extension Serve {
    /// With `--otel-endpoint URL` (`otel.endpoint`): the process's tracer
    /// exports the server's spans (``ServerSpan``) over OTLP/HTTP with
    /// protobuf to `URL/v1/traces`, and the exporter runs as a service
    /// that sends what is left when the server stops. Without it, no
    /// tracer: every span is a no-op. Only the W3C `traceparent` and
    /// `tracestate` of a request are read; baggage is not.
    func tracing(_ settings: ServerSettings, logger: Logger) throws -> (any Service)? {
        guard let text = settings.value(otelEndpoint, "otel.endpoint") else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "coffer-server"
        configuration.resourceAttributes = ["service.version": CofferVersion.string]
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .warning
        configuration.propagators = [.traceContext]
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.sampler = .parentBasedAlwaysOn
        configuration.traces.batchSpanProcessor.scheduleDelay = .seconds(1)
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.traces.otlpExporter.endpoint = try Self.otelEndpoint(text) + "/v1/traces"
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracer)
        return service
    }

    /// An OTLP/HTTP receiver's base URL: http or https, a host, perhaps a
    /// port and a path; no query, fragment or user.
    static func otelEndpoint(_ text: String) throws -> String {
        guard let url = URLComponents(string: text), ["http", "https"].contains(url.scheme),
            let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil, url.user == nil,
            url.password == nil
        else {
            throw ValidationError(
                "--otel-endpoint is an OTLP/HTTP receiver's URL, like http://127.0.0.1:4318, not \(text)")
        }
        var base = text
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }
}
#endif
