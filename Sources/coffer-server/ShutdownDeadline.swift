#if Server
import Dispatch
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A bound on graceful shutdown. On SIGTERM or SIGINT the server stops
/// accepting connections and waits for the requests in flight (Hummingbird's
/// service group does that); if they have not finished after `grace`, the
/// process exits anyway, with status 1 and a log line saying so. Nothing
/// acknowledged is lost by that exit: every change is committed before its
/// answer is sent. A supervisor's own kill comes later still, so a request
/// stuck on an unreachable database cannot hold a stopping replica forever.
enum ShutdownDeadline {
    static let grace: Duration = .seconds(10)

    /// Keeps the signal sources alive for the life of the process.
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    static func arm(logger: Logger) {
        let queue = DispatchQueue(label: "coffer-server.shutdown-deadline")
        for number in [SIGTERM, SIGINT] {
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                logger.info("stopping: requests in flight have \(grace) to finish")
                queue.asyncAfter(deadline: .now() + .seconds(Int(grace.components.seconds))) {
                    logger.error("requests still in flight after \(grace); exiting without them")
                    exit(1)
                }
            }
            source.resume()
            sources.append(source)
        }
    }
}
#endif
