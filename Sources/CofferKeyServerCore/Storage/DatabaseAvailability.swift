#if Server
import Coffer
import Logging
import Synchronization

/// Says in the log when the database goes away and when it comes back,
/// once each (operator trial 4: a PostgreSQL stop and restart left no
/// line at all). Until a logger is given it only keeps the state.
///
/// A failure within ``relapse`` of the database coming back (a pool's
/// connections from before a restart failing one by one) is the same
/// outage: no second pair of lines.
final class DatabaseAvailability: Sendable {
    private struct State {
        var down = false
        var logger: Logger?
        var since: ContinuousClock.Instant?
        /// When the database was last said to be back.
        var back: ContinuousClock.Instant?
        /// Down again within `relapse` of `back`: the next up says nothing.
        var relapsed = false
    }
    private let state = Locked(State())
    /// Read before the lock, so that a statement that succeeds while the
    /// database is up (nearly all of them) takes no lock here.
    private let isDown = Atomic<Bool>(false)
    let location: String
    static let relapse: Duration = .seconds(5)

    init(location: String) { self.location = location }

    func log(to logger: Logger) { state.withLock { $0.logger = logger } }

    /// A statement failed because the database did not answer.
    func down(_ reason: String) {
        let logger = state.withLock { state -> Logger? in
            guard !state.down else { return nil }
            state.down = true
            isDown.store(true, ordering: .releasing)
            if let back = state.back, ContinuousClock.now - back < Self.relapse {
                state.relapsed = true
                return nil
            }
            state.since = .now
            return state.logger
        }
        logger?.warning(
            "database unavailable: it \(reason); requests that need it answer 503 until it is back",
            metadata: ["database": "\(location)"])
    }

    /// A statement succeeded.
    func up() {
        guard isDown.load(ordering: .acquiring) else { return }
        let (logger, since) = state.withLock { state -> (Logger?, ContinuousClock.Instant?) in
            guard state.down else { return (nil, nil) }
            state.down = false
            isDown.store(false, ordering: .releasing)
            if state.relapsed {
                state.relapsed = false
                return (nil, nil)
            }
            state.back = .now
            return (state.logger, state.since.take())
        }
        guard let logger, let since else { return }
        let seconds = (ContinuousClock.now - since).components.seconds
        logger.notice(
            "database available again after \(seconds) s", metadata: ["database": "\(location)"])
    }
}
#endif
