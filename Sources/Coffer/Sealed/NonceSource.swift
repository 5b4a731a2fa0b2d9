import Crypto
import CryptoExtras
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Random nonces for sealed values (and the store's row lives) without a
/// system call each: 4 KiB of the operating system's CSPRNG at a time,
/// handed out once and wiped as used.
/// After `fork` the child discards what the parent had, so the two never
/// hand out the same bytes. (AES-GCM-SIV would survive a repeated nonce,
/// leaking only equality of identical values; this keeps it from happening.)
package final class NonceSource: Sendable {
    package static let shared = NonceSource()

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
    package func nonce(into buffer: UnsafeMutableRawBufferPointer) {
        let count = buffer.count
        state.withLock { pool in
            let generation = forkGeneration.load(ordering: .relaxed)
            if pool.used + count > pool.bytes.count || generation != pool.owner {
                pool.bytes.withUnsafeMutableBytes { systemRandom($0) }
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

/// Fills `buffer` from the operating system's CSPRNG in a few system
/// calls: `arc4random_buf` on Apple platforms, `/dev/urandom` on Linux
/// (the kernel's CSPRNG, which swift-crypto's random keys read 8 bytes per
/// `getrandom` call; `getrandom` itself is not in Swift's Glibc module).
func systemRandom(_ buffer: UnsafeMutableRawBufferPointer) {
    #if canImport(Darwin)
    arc4random_buf(buffer.baseAddress!, buffer.count)
    #else
    let descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
    // Without the kernel's CSPRNG no nonce can be made; one must never be guessed.
    guard descriptor >= 0 else { fatalError("cannot open /dev/urandom (errno \(errno))") }
    defer { close(descriptor) }
    var filled = 0
    while filled < buffer.count {
        let count = read(descriptor, buffer.baseAddress! + filled, buffer.count - filled)
        if count <= 0 {
            guard count < 0, errno == EINTR else { fatalError("cannot read /dev/urandom (errno \(errno))") }
            continue
        }
        filled += count
    }
    #endif
}
