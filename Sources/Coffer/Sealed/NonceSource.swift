import Crypto
import CryptoExtras
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
        /// The fork generation the bytes were drawn in.
        var owner: UInt64 = 0
    }

    private let state = Locked(Pool())

    private init() {
        // In a forked child the generation moves on, so the pool inherited
        // from the parent is discarded before any of it is handed out.
        pthread_atfork(nil, nil, { forkGeneration.add(1, ordering: .relaxed) })
    }

    /// A fresh 12-byte AES-GCM-SIV nonce.
    func sivNonce() -> AES.GCM._SIV.Nonce {
        var bytes: (UInt64, UInt32) = (0, 0)
        return withUnsafeMutableBytes(of: &bytes) { raw in
            nonce(into: raw)
            // 12 bytes is the only size the initialiser is given.
            return try! AES.GCM._SIV.Nonce(data: UnsafeRawBufferPointer(raw))
        }
    }

    /// Fills `buffer` (at most 4 KiB) with bytes never handed out before.
    func nonce(into buffer: UnsafeMutableRawBufferPointer) {
        let count = buffer.count
        state.withLock { pool in
            let generation = forkGeneration.load(ordering: .relaxed)
            if pool.used + count > pool.bytes.count || generation != pool.owner {
                SymmetricKey(size: SymmetricKeySize(bitCount: pool.bytes.count * 8)).withUnsafeBytes { fresh in
                    pool.bytes.withUnsafeMutableBytes { $0.copyMemory(from: fresh) }
                }
                pool.used = 0
                pool.owner = generation
            }
            pool.bytes.withUnsafeMutableBytes { bytes in
                let start = bytes.baseAddress! + pool.used
                buffer.baseAddress!.copyMemory(from: start, byteCount: count)
                memset(start, 0, count)
            }
            pool.used += count
        }
    }
}

/// How many times this process has been forked into the current one
/// (counted in the child by `pthread_atfork`); no system call to read.
private let forkGeneration = Atomic<UInt64>(0)
