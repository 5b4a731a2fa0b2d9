import Dispatch

/// Runs blocking work (file I/O, `flock`, scrypt, whole-file encryption)
/// on a Dispatch thread and suspends the calling task until it is done, so
/// that a server's cooperative thread pool, which has one thread per core,
/// never waits on a disk or a lock. The async twins of the library's
/// blocking calls go through it.
package enum BlockingWork {
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try work() })
            }
        }
    }
}
