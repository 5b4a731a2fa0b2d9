#if Server
import Coffer
import Logging
import ServiceLifecycle

/// Checks, every `interval`, that the KEK's holder (an HSM's token) still
/// answers, and tells the store (``ServerKeyStore/kekHolder(reachable:reason:)``):
/// while it does not, what needs the KEK answers `503 kek-unavailable`,
/// and the server recovers by itself when the token is back. Each change
/// is one log line; the check's own error is logged, never a secret.
public struct KEKHolderService: Service {
    let store: ServerKeyStore
    let check: @Sendable () throws -> Void
    let interval: Duration
    let logger: Logger

    public init(
        store: ServerKeyStore, interval: Duration = .seconds(5), logger: Logger,
        check: @escaping @Sendable () throws -> Void
    ) {
        self.store = store
        self.check = check
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await everyInterval(interval) { await checkOnce() }
    }

    /// One check, and its log line when the holder's state changed.
    public func checkOnce() async {
        do {
            try await BlockingWork.run { try check() }
            if store.kekHolder(reachable: true) {
                logger.notice("the KEK's holder answers again; keys are released as before")
                try? await store.reloadKEK()
            }
        } catch {
            let reason = (error as? CofferError)?.description ?? "\(type(of: error))"
            if store.kekHolder(reachable: false, reason: reason) {
                logger.error(
                    "the KEK's holder does not answer; requests that need the KEK answer 503 until it does",
                    metadata: ["error": "\(reason)"])
            }
        }
    }
}
#endif
