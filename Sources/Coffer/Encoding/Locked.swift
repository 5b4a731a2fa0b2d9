import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value that only one thread at a time reads or changes: a
/// `Synchronization.Mutex` around it.
///
/// In ThreadSanitizer builds (`-Xswiftc -DCOFFER_TSAN`, which
/// `scripts/test-tsan` passes) it is a pthread mutex instead. TSan does not
/// see `Mutex`'s synchronisation on Linux (Swift 6.3: a ten-line program
/// appending to a `Mutex<[Int]>` from eight threads is reported as a race),
/// while it intercepts pthread mutexes, so only this way does a TSan run
/// report real races and nothing else.
#if COFFER_TSAN
package final class Locked<Value: Sendable>: @unchecked Sendable {  // every access to `value` holds `mutex`
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
#else
package final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    package init(_ value: sending Value) { mutex = Mutex(value) }

    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try mutex.withLock { value throws -> R in try body(&value) }
    }
}
#endif
