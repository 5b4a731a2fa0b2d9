import Foundation

/// Counts expensive operations (KDF runs, RSA private-key operations) in
/// the current task, so tests can prove a cap bounds the work done on
/// hostile input by counting it rather than timing it.
///
/// ```swift
/// let counter = WorkCounter()
/// try WorkCounter.$current.withValue(counter) { try open(hostileFile) }
/// #expect(counter.count(.kdf) == 0)
/// ```
package final class WorkCounter: @unchecked Sendable {  // counts guarded by `lock`
    package enum Kind: Hashable, Sendable { case kdf, rsaPrivate }

    @TaskLocal package static var current: WorkCounter?

    private let lock = NSLock()
    private var counts: [Kind: Int] = [:]

    package init() {}

    package func count(_ kind: Kind) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return counts[kind, default: 0]
    }

    /// Records one operation of `kind` in the current task's counter, if any.
    static func record(_ kind: Kind) {
        guard let counter = current else { return }
        counter.lock.lock()
        counter.counts[kind, default: 0] += 1
        counter.lock.unlock()
    }
}
