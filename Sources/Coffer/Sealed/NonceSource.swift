import Crypto
import Foundation
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
final class NonceSource: @unchecked Sendable {  // state guarded by `lock`
    static let shared = NonceSource()

    private var lock = pthread_mutex_t()
    private var pool = [UInt8](repeating: 0, count: 4096)
    private var used = 4096
    private var owner: pid_t = 0

    private init() { pthread_mutex_init(&lock, nil) }

    func nonce(into buffer: inout [UInt8], count: Int) {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        let pid = getpid()
        if used + count > pool.count || pid != owner {
            SymmetricKey(size: SymmetricKeySize(bitCount: pool.count * 8)).withUnsafeBytes { fresh in
                pool.withUnsafeMutableBytes { $0.copyMemory(from: fresh) }
            }
            used = 0
            owner = pid
        }
        for index in 0..<count {
            buffer[index] = pool[used + index]
            pool[used + index] = 0
        }
        used += count
    }
}
