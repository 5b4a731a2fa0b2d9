import CryptoExtras
import Foundation
import Testing

@testable import Coffer

/// The nonce pool and the system randomness that refills it.
@Suite struct NonceSourceTests {
    /// A buffer much larger than one read comes back filled, and two fills differ.
    @Test func systemRandomFills() {
        var first = [UInt8](repeating: 0, count: 70_000)
        var second = first
        first.withUnsafeMutableBytes { systemRandom($0) }
        second.withUnsafeMutableBytes { systemRandom($0) }
        #expect(first != second)
        // No 4 KiB stretch is left as it was (zero) by a short read.
        for start in stride(from: 0, to: first.count, by: 4096) {
            #expect(first[start..<min(first.count, start + 4096)].contains { $0 != 0 })
        }
    }

    /// Across several pool refills and from several threads at once, no
    /// nonce is handed out twice.
    @Test func noncesNeverRepeat() {
        let seen = Locked(Set<Data>())
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            var mine: [Data] = []
            for _ in 0..<2000 {
                mine.append(NonceSource.shared.sivNonce().withUnsafeBytes { Data($0) })
            }
            seen.withLock { $0.formUnion(mine) }
        }
        #expect(seen.withLock { $0.count } == 8000)
    }
}
