#if Server
import Coffer
import CofferKeyServerCore
import Foundation
import Hummingbird
import Prometheus

/// What `GET /metrics` reports, in Prometheus's text format: requests by
/// route, method and status; their latency by route; the verified-token
/// cache's hits and misses; the batches of key releases run (one database
/// transaction each) and the releases they carried, whose ratio says how
/// many releases share one commit; and how many stored keys still wait to be
/// rewrapped under the KEK's primary (the progress of a KEK rotation, by
/// whichever process runs it). No label holds a subject, a purpose, a
/// device or a token, so nothing private reaches a metrics system and the
/// number of series stays fixed.
///
/// The executable `coffer-server` also makes this registry swift-metrics'
/// backend, so what its libraries report through swift-metrics is served
/// beside it. A library user passes its own registry to share one.
public final class KeyServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// The series already made, so a request finds its counter and histogram
    /// in one dictionary lookup instead of asking the registry (which
    /// builds, sorts and compares the label set under its own lock).
    /// `Locked`, as everywhere in Coffer, so that a ThreadSanitizer build
    /// sees the lock (it does not see `Synchronization.Mutex` on Linux).
    private let series = Locked<[SeriesKey: Series]>([:])

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
    }

    private struct SeriesKey: Hashable {
        let route: String
        let method: String
        let status: Int
    }
    private struct Series {
        let requests: Counter
        let latency: DurationHistogram
    }

    static let buckets: [Duration] = [
        .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .seconds(3), .seconds(10),
    ]
    // (Computed: MetricNameDescriptor is not Sendable.)
    static var requests: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "coffer", metricName: "http_requests", unitName: "total",
            helpText: "Requests answered, by route, method and status.")
    }
    static var latency: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "coffer", metricName: "http_request_duration", unitName: "seconds",
            helpText: "Time from a request's arrival to its answer, by route.")
    }

    func record(route: String, method: String, status: Int, elapsed: Duration) {
        let key = SeriesKey(route: route, method: method, status: status)
        let found = series.withLock { known in
            if let found = known[key] { return found }
            let made = Series(
                requests: registry.makeCounter(
                    descriptor: Self.requests,
                    labels: [("route", route), ("method", method), ("status", String(status))]),
                latency: registry.makeDurationHistogram(
                    descriptor: Self.latency, labels: [("route", route)], buckets: Self.buckets))
            known[key] = made
            return made
        }
        found.requests.increment()
        found.latency.record(elapsed)
    }

    /// The registry's metrics, then those read when scraped.
    func exposition(server: KeyServer) async -> String {
        var text = registry.emitToString()
        let cache = server.verifier.cacheCounts
        text += """
            # HELP coffer_token_cache_total Sign-in tokens found in the verified-token cache (hit) or verified (miss).
            # TYPE coffer_token_cache_total counter
            coffer_token_cache_total{result="hit"} \(cache.hits)
            coffer_token_cache_total{result="miss"} \(cache.misses)

            """
        let releases = server.store.releases.counts
        text += """
            # HELP coffer_release_batches_total Batches of key releases run, one database transaction each.
            # TYPE coffer_release_batches_total counter
            coffer_release_batches_total \(releases.batches)
            # HELP coffer_release_requests_total Key releases those batches carried.
            # TYPE coffer_release_requests_total counter
            coffer_release_requests_total \(releases.items)

            """
        let counted = server.store.limiter.counted
        text += """
            # HELP coffer_rate_count_batches_total Transactions that raised the shared rate-limit counts.
            # TYPE coffer_rate_count_batches_total counter
            coffer_rate_count_batches_total \(counted.transactions)
            # HELP coffer_rate_count_requests_total Requests counted (one per limit), in those transactions or in key releases'.
            # TYPE coffer_rate_count_requests_total counter
            coffer_rate_count_requests_total \(counted.counts)

            """
        let anchors = server.store.anchorCounts
        text += """
            # HELP coffer_audit_anchor_refusals_total Audit anchors refused: the chain in the database no longer extends the last anchor.
            # TYPE coffer_audit_anchor_refusals_total counter
            coffer_audit_anchor_refusals_total \(anchors.refusals)
            # HELP coffer_audit_anchor_failures_total Audit anchors not written for another reason (the database, the anchor key).
            # TYPE coffer_audit_anchor_failures_total counter
            coffer_audit_anchor_failures_total \(anchors.failures)

            """
        // Left out while the database does not answer (readiness says so).
        if let waiting = try? await server.store.rowsToRewrap() {
            text += """
                # HELP coffer_keys_awaiting_rewrap Stored keys not yet wrapped under the KEK's primary.
                # TYPE coffer_keys_awaiting_rewrap gauge
                coffer_keys_awaiting_rewrap \(waiting)

                """
        }
        return text
    }
}

/// Records every request's route (the pattern matched, never the path
/// itself), method, status and latency.
struct MetricsMiddleware: RouterMiddleware {
    let metrics: KeyServerMetrics

    func handle(
        _ request: Request, context: KeyServerContext,
        next: (Request, KeyServerContext) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        metrics.record(
            route: context.endpointPath ?? "unmatched", method: request.method.rawValue,
            status: response.status.code, elapsed: ContinuousClock.now - start)
        return response
    }
}
#endif
