#if Server
import Coffer
import CofferKeyServer
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The log level every logger of the process shares, so that SIGHUP can
/// change it for loggers already made (a request's logger is a copy).
/// Read at every log call, so an atomic load, not a lock.
final class SharedLogLevel: Sendable {
    static let process = SharedLogLevel()
    private static let levels = Logger.Level.allCases
    private let index = Atomic<Int>(Logger.Level.allCases.firstIndex(of: .info)!)
    var value: Logger.Level {
        get { Self.levels[index.load(ordering: .relaxed)] }
        set { index.store(Self.levels.firstIndex(of: newValue)!, ordering: .relaxed) }
    }
}

/// A log handler whose level is ``SharedLogLevel/process``'s.
struct SharedLevelLogHandler<Inner: LogHandler>: LogHandler {
    var inner: Inner
    var logLevel: Logger.Level {
        get { SharedLogLevel.process.value }
        set { SharedLogLevel.process.value = newValue }
    }
    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }
    func log(event: LogEvent) { inner.log(event: event) }
}

/// On SIGHUP, reloads what can change without a restart and says what it
/// reloaded: the log level (from the settings file, unless `--log-level`
/// fixed it), the issuer's key set (a JWKS file, URL or discovery's
/// `jwks_uri`) and the TLS certificate; everything else needs a restart.
struct ReloadService: Service {
    let verifier: SignInVerifier
    /// The TLS certificate and key, when the server serves HTTPS.
    let certificate: ServerCertificate?
    let level: @Sendable () async throws -> Logger.Level
    let logger: Logger

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            var said: [String] = []
            var newLevel: Logger.Level?
            do {
                newLevel = try await level()
                said.append("log level \(newLevel!)")
            } catch {
                logger.error("SIGHUP: the settings did not reload", metadata: ["error": "\(error)"])
            }
            do {
                let count = try await verifier.reloadKeys()
                said.append("the issuer's key set (\(count) key\(count == 1 ? "" : "s"))")
            } catch {
                logger.error(
                    "SIGHUP: the issuer's key set did not reload; the old one stays", metadata: ["error": "\(error)"])
            }
            if let certificate {
                do {
                    try certificate.reload()
                    said.append("the TLS certificate")
                } catch {
                    logger.error(
                        "SIGHUP: the TLS certificate did not reload; the old one stays", metadata: ["error": "\(error)"]
                    )
                }
            }
            // Said before the new level applies, so that it is said at any level.
            logger.notice(
                "SIGHUP: reloaded \(said.isEmpty ? "nothing" : said.joined(separator: " and ")); other settings need a restart"
            )
            if let newLevel { SharedLogLevel.process.value = newLevel }
        }
    }
}
#endif
