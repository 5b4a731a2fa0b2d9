import Coffer
import Foundation

extension RecordStore {
    /// `transform` over `items` on every core, in order; the first error is thrown.
    static func parallelMap<T: Sendable, R: Sendable>(_ items: [T], _ transform: @Sendable (T) throws -> R) throws
        -> [R]
    {
        let results = Locked([Result<R, any Error>?](repeating: nil, count: items.count))
        DispatchQueue.concurrentPerform(iterations: items.count) { index in
            let result = Result { try transform(items[index]) }
            results.withLock { $0[index] = result }
        }
        return try results.withLock { $0 }.map { try $0!.get() }
    }

    /// Work started on another thread, whose result `wait()` returns.
    final class Pending<T: Sendable>: Sendable {
        private let group = DispatchGroup()
        private let result = Locked<Result<T, any Error>?>(nil)

        init(_ work: @escaping @Sendable () throws -> T) {
            group.enter()
            DispatchQueue.global().async { [result, group] in
                let outcome = Result { try work() }
                result.withLock { $0 = outcome }
                group.leave()
            }
        }

        func wait() throws -> T {
            group.wait()
            return try result.withLock { $0! }.get()
        }
    }
}
