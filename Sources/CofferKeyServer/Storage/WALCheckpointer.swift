#if Server
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
/// skipped. A tick that finds the WAL as it was at the last checkpoint
/// (same size, same modification time) opens nothing. The task ends with
/// this object.
///
/// (Tried for CofferStore's bulk puts too, with a 32 MiB WAL: no faster,
/// since their cost is the index pages a put dirties, not the copy.)
final class WALCheckpointer: Sendable {
    private let task: Task<Void, Never>

    init(path: String, every interval: Duration = .milliseconds(250)) {
        task = Task.detached(priority: .utility) {
            var folded: WALState?
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled else { return }
                let now = WALState(path + "-wal")
                guard now != nil, now != folded else { continue }
                await Self.checkpoint(path)
                folded = now
            }
        }
    }

    /// One passive checkpoint on a connection opened for it and closed
    /// after, so that none stays open beside the store's own: the last of
    /// those to close still copies the WAL into the database and removes
    /// it, and a database file copied after its store closed is whole.
    private static func checkpoint(_ path: String) async {
        // Never creates a database that is gone.
        guard FileManager.default.fileExists(atPath: path) else { return }
        var configuration = Configuration()
        configuration.busyMode = .immediateError
        configuration.label = "coffer.checkpoint"
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return }
        _ = try? await queue.writeWithoutTransaction { db in try db.checkpoint(.passive) }
        try? queue.close()
    }

    /// What the file system says of a WAL file: a writer's commit changes
    /// its modification time, a checkpoint does not.
    struct WALState: Equatable {
        let size: Int
        let modified: Date

        init?(_ path: String) {
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                let size = attributes[.size] as? Int, let modified = attributes[.modificationDate] as? Date
            else { return nil }
            self.size = size
            self.modified = modified
        }
    }

    func stop() { task.cancel() }

    deinit { task.cancel() }
}
#endif
