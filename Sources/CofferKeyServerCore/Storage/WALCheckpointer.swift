#if Server
import Coffer
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
/// A passive checkpoint alone lets the WAL grow without end under steady
/// load: SQLite starts the WAL over only when a transaction begins with
/// every frame copied back, and with a batch committing every few
/// milliseconds the copy never catches up (seen: 349 MB of WAL in ten
/// seconds of DPoP key fetches, against a 15 MB database; each commit then
/// also grew the file, so its sync carried the file system's metadata).
/// So when the WAL held ``restartFrames`` or more, a restart follows the
/// passive checkpoint: it waits up to 50 ms for the batch in flight, copies
/// what came after the passive one, and the next commit writes the WAL
/// from its start again. If it cannot have the writer in time, it gives up
/// and the next tick tries again.
///
/// (Tried for CofferStore's bulk puts too, with a 32 MiB WAL: no faster,
/// since their cost is the index pages a put dirties, not the copy.)
final class WALCheckpointer: Sendable {
    /// WAL frames (pages) from which a checkpoint ends in a restart: SQLite's
    /// own threshold for its automatic checkpoint, 4 MiB of 4 KiB pages.
    static let restartFrames = 1000
    private let task: Task<Void, Never>
    private let restartCount = Locked(0)
    private let path: String

    /// The restarts so far: each began the WAL again from its start.
    var restarts: Int { restartCount.withLock { $0 } }

    init(path: String, every interval: Duration = .milliseconds(250)) {
        self.path = path
        let restartCount = restartCount
        task = Task.detached(priority: .utility) {
            var folded: WALState?
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled else { return }
                let now = WALState(path + "-wal")
                guard now != nil, now != folded else { continue }
                if await Self.checkpoint(path) { restartCount.withLock { $0 += 1 } }
                folded = now
            }
        }
    }

    /// One passive checkpoint, and a restart after it when the WAL has
    /// grown to ``restartFrames``, on a connection opened for it and closed
    /// after, so that none stays open beside the store's own: the last of
    /// those to close still copies the WAL into the database and removes
    /// it, and a database file copied after its store closed is whole.
    /// True when the WAL was restarted.
    private static func checkpoint(_ path: String) async -> Bool {
        // Only the restart waits (a passive checkpoint never calls the busy
        // handler, and finding another checkpoint running it is skipped).
        await onItsOwnConnection(path) { db in
            let (frames, _) = try db.checkpoint(.passive)
            guard frames >= restartFrames else { return false }
            let (left, copied) = try db.checkpoint(.restart)
            return left == copied
        }
    }

    /// `body`'s answer on a connection to `path` opened for it, whose busy
    /// handler waits at most 50 ms, and closed after; false when the file
    /// is gone (never created again here) or `body` throws. The handler
    /// tries again every 100 µs: SQLite's own (`busy_timeout`) sleeps 1, 2,
    /// 5, 10, 15 and 20 ms between tries, four tries in 50 ms, and a writer
    /// committing batch after batch held its lock at every one of them, so
    /// that restarts failed tick after tick and the WAL grew past 20 MB in a
    /// test that bounds it at 16.
    private static func onItsOwnConnection(_ path: String, _ body: @escaping @Sendable (Database) throws -> Bool)
        async -> Bool
    {
        guard FileManager.default.fileExists(atPath: path) else { return false }
        var configuration = Configuration()
        configuration.busyMode = .callback { tries in
            guard tries < 500 else { return false }
            usleep(100)
            return true
        }
        configuration.label = "coffer.checkpoint"
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return false }
        let answer = try? await queue.writeWithoutTransaction(body)
        try? queue.close()
        return answer ?? false
    }

    /// A truncating checkpoint: every frame copied into the database and the
    /// WAL cut to nothing, so that rows deleted under `secure_delete` (whose
    /// pages the database now holds zeroed) leave no copy in it (a shred's
    /// sweep; security review 3, G8). It needs a moment with no transaction
    /// writing and no reader on an older snapshot: each try waits at most
    /// 50 ms for one, on its own connection, and the tries go on for up to
    /// `within`. False if none found its moment.
    func truncate(within: Duration = .seconds(5)) async -> Bool {
        let end = ContinuousClock.now + within
        while true {
            if await Self.truncate(path) { return true }
            guard ContinuousClock.now < end else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    private static func truncate(_ path: String) async -> Bool {
        await onItsOwnConnection(path) { db in
            let (left, copied) = try db.checkpoint(.truncate)
            return left == copied
        }
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
