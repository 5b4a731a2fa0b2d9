#if Server
import Coffer
import Logging
import ServiceLifecycle

/// The key store's upkeep while the server runs, every `interval`: the
/// shred sweep (keys whose undo window ended are deleted; expired rate
/// counts and spent proofs are forgotten) and a reading of the KEK, which
/// `coffer-server kek rotate` may have changed (off the request threads:
/// with a passphrase it is an scrypt). Stops at the server's graceful
/// shutdown.
public struct MaintenanceService: Service {
    let store: ServerKeyStore
    let interval: Duration
    let logger: Logger

    public init(store: ServerKeyStore, interval: Duration = .seconds(30), logger: Logger) {
        self.store = store
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await everyInterval(interval) {
            do { try await store.sweep() } catch {
                logger.warning(
                    "the shred sweep failed; it runs again", metadata: ["error.type": "\(type(of: error))"])
            }
            try? await store.reloadKEK()
        }
    }
}

/// Runs `work` every `interval` until the server's graceful shutdown (or
/// the task's cancellation).
func everyInterval(_ interval: Duration, _ work: @escaping @Sendable () async -> Void) async {
    try? await cancelWhenGracefulShutdown {
        while !Task.isCancelled {
            try await Task.sleep(for: interval)
            await work()
        }
    }
}

/// The audit chain's anchors (``AuditAnchor``): every `interval` the head,
/// when the chain grew, is anchored in the database, and its checkpoint
/// line handed to `checkpoint` (a file, standard output, an external log);
/// once more at graceful shutdown, after the HTTP server stopped, so the
/// log ends anchored.
public struct AuditAnchorService: Service {
    let store: ServerKeyStore
    let interval: Duration
    let checkpoint: (@Sendable (String) throws -> Void)?
    let logger: Logger
    /// The last head anchored by this service, so that an idle chain
    /// writes no more checkpoint lines.
    private let anchored = Locked<AuditHead?>(nil)

    public init(
        store: ServerKeyStore, interval: Duration = .seconds(60),
        checkpoint: (@Sendable (String) throws -> Void)? = nil,
        logger: Logger
    ) {
        self.store = store
        self.interval = interval
        self.checkpoint = checkpoint
        self.logger = logger
    }

    public func run() async throws {
        await everyInterval(interval) { await anchor() }
        await anchor()
    }

    /// Anchors the head; a failure is logged and tried again next time.
    func anchor() async {
        do {
            // Any other head than the last one anchored, a lower one too:
            // the store refuses what does not extend its last anchor.
            guard let head = try await store.auditHead(), head != anchored.withLock({ $0 }),
                let anchor = try await store.anchorAudit()
            else { return }
            try checkpoint?(anchor.line + "\n")
            anchored.withLock { $0 = anchor.head }
        } catch let refusal as AuditAnchorRefusal {
            logger.error(
                "audit anchor refused: the audit chain in the database no longer extends the last anchor",
                metadata: ["reason": "\(refusal)"])
        } catch {
            logger.warning("audit anchor not written", metadata: ["error": "\(error)"])
        }
    }
}
#endif
