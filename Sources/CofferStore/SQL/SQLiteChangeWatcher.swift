import Coffer
import Foundation
import GRDB

/// A read-only connection of its own whose `PRAGMA data_version` moves
/// when any other connection, of this process or another, commits to the
/// file; closed when the watcher goes.
final class SQLiteChangeWatcher: StoreChangeWatcher {
    let queue: DatabaseQueue
    /// How many are open in this process (the tests' count of what observations hold).
    static let open = Locked(0)

    init(path: String) throws {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(5)
        do { queue = try DatabaseQueue(path: path, configuration: configuration) } catch let error as DatabaseError {
            throw SQLiteBackend.coffer(error)
        }
        Self.open.withLock { $0 += 1 }
    }

    func marker() throws -> Int64 {
        do {
            return try queue.inDatabase { try Int64.fetchOne($0, sql: "PRAGMA data_version") } ?? 0
        } catch let error as DatabaseError {
            throw SQLiteBackend.coffer(error)
        }
    }

    deinit {
        try? queue.close()
        Self.open.withLock { $0 -= 1 }
    }
}
