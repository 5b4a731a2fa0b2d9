#if Server
import Coffer
import Logging

/// Says in the log when the database goes away and when it comes back,
/// once each (operator trial 4: a PostgreSQL stop and restart left no
/// line at all). Until a logger is given it only keeps the state.
final class DatabaseAvailability: Sendable {
    private struct State {
        var down = false
        var logger: Logger?
        var since: ContinuousClock.Instant?
    }
    private let state = Locked(State())
    let location: String

    init(location: String) { self.location = location }

    func log(to logger: Logger) { state.withLock { $0.logger = logger } }

    /// A statement failed because the database did not answer.
    func down(_ reason: String) {
        let logger = state.withLock { state -> Logger? in
            guard !state.down else { return nil }
            state.down = true
            state.since = .now
            return state.logger
        }
        logger?.warning(
            "database unavailable: it \(reason); requests that need it answer 503 until it is back",
            metadata: ["database": "\(location)"])
    }

    /// A statement succeeded.
    func up() {
        let (logger, since) = state.withLock { state -> (Logger?, ContinuousClock.Instant?) in
            guard state.down else { return (nil, nil) }
            state.down = false
            return (state.logger, state.since.take())
        }
        guard let logger, let since else { return }
        let seconds = (ContinuousClock.now - since).components.seconds
        logger.notice(
            "database available again after \(seconds) s", metadata: ["database": "\(location)"])
    }
}
#endif
