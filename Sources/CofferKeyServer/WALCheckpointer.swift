import Foundation
import GRDB

/// Checkpoints a WAL database off its writer's path. SQLite's automatic
/// checkpoint runs inside the commit that crosses its threshold (1,000
/// pages), so every few hundred audited releases one batch waited while
/// pages were copied into the database and synced, and with it every
/// request queued behind that batch: the tail of the latency. Instead the
/// writer never checkpoints (`wal_autocheckpoint = 0` on its connections)
/// and this task runs a passive checkpoint, which waits for no writer and
/// no reader, on a connection of its own, four times a second, on GRDB's
/// dispatch queue rather than the cooperative pool. Several processes on
/// one file each run one; a checkpoint that finds another running is
/// skipped.
final class WALCheckpointer: Sendable {
    private let task: Task<Void, Never>

    init(path: String, every interval: Duration = .milliseconds(250)) throws {
        var configuration = Configuration()
        configuration.busyMode = .immediateError
        configuration.label = "coffer.server.checkpoint"
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        task = Task.detached(priority: .utility) {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                _ = try? await queue.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            }
        }
    }

    func stop() { task.cancel() }

    deinit { task.cancel() }
}
