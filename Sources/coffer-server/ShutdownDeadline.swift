#if Server
import CofferKeyServerCore
import Dispatch
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A bound on graceful shutdown. On SIGTERM or SIGINT the server stops
/// accepting connections and waits for the requests in flight; the service
/// group (`ServiceGroupConfiguration.maximumGracefulShutdownDuration`)
/// cancels what has not finished after `grace`. Should a task ignore that,
/// the process exits anyway `backstop` later, with status 1 and a log line
/// saying so. Nothing
/// acknowledged is lost by that exit: every change is committed before its
/// answer is sent. A supervisor's own kill comes later still, so a request
/// stuck on an unreachable database cannot hold a stopping replica forever.
enum ShutdownDeadline {
    static let grace: Duration = .seconds(10)
    static let backstop: Duration = .seconds(3)

    /// Keeps the signal sources alive for the life of the process.
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    static func arm(logger: Logger) {
        let queue = DispatchQueue(label: "coffer-server.shutdown-deadline")
        for number in [SIGTERM, SIGINT] {
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                logger.info("stopping: requests in flight have \(grace) to finish")
                let seconds = Int((grace + backstop).components.seconds)
                queue.asyncAfter(deadline: .now() + .seconds(seconds)) {
                    logger.error("requests still in flight after \(grace + backstop); exiting without them")
                    exit(1)
                }
            }
            source.resume()
            sources.append(source)
        }
    }
}
#endif
