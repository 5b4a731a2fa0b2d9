import Foundation
import Synchronization

/// Counts expensive operations (KDF runs, RSA private-key operations) in
/// the current task, so tests can prove a cap bounds the work done on
/// hostile input by counting it rather than timing it.
///
/// ```swift
/// let counter = WorkCounter()
/// try WorkCounter.$current.withValue(counter) { try open(hostileFile) }
/// #expect(counter.count(.kdf) == 0)
/// ```
package final class WorkCounter: Sendable {
    package enum Kind: Hashable, Sendable { case kdf, rsaPrivate }

    @TaskLocal package static var current: WorkCounter?

    private let counts = Locked<[Kind: Int]>([:])

    package init() {}

    package func count(_ kind: Kind) -> Int {
        counts.withLock { $0[kind, default: 0] }
    }

    /// Records one operation of `kind` in the current task's counter, if any.
    static func record(_ kind: Kind) {
        current?.counts.withLock { $0[kind, default: 0] += 1 }
    }
}
