import Crypto
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Random nonces for sealed values without a system call each: 4 KiB of
/// system randomness at a time (swift-crypto's random key generation, which
/// reads the operating system's CSPRNG), handed out once and wiped as used.
/// After `fork` the child discards what the parent had, so the two never
/// hand out the same bytes. (AES-GCM-SIV would survive a repeated nonce,
/// leaking only equality of identical values; this keeps it from happening.)
final class NonceSource: Sendable {
    static let shared = NonceSource()

    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var used = 4096
        var owner: pid_t = 0
    }

    private let state = Mutex(Pool())

    private init() {}

    func nonce(into buffer: inout [UInt8], count: Int) {
        state.withLock { pool in
            let pid = getpid()
            if pool.used + count > pool.bytes.count || pid != pool.owner {
                SymmetricKey(size: SymmetricKeySize(bitCount: pool.bytes.count * 8)).withUnsafeBytes { fresh in
                    pool.bytes.withUnsafeMutableBytes { $0.copyMemory(from: fresh) }
                }
                pool.used = 0
                pool.owner = pid
            }
            for index in 0..<count {
                buffer[index] = pool.bytes[pool.used + index]
                pool.bytes[pool.used + index] = 0
            }
            pool.used += count
        }
    }
}
