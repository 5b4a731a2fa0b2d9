#if canImport(Glibc)
import Coffer
import Crypto
import CryptoExtras
import Foundation

/// `coffer-bench sealed [--seconds N]`: sealed values (seal and open through
/// a key ring, 64-byte and 1 KiB values) beside raw `AES.GCM.seal` of the
/// same size, one core, in the same run; alternating, best of six.
enum SealedBenchmark {
    static func run(seconds: Double) throws {
        print("coffer-bench sealed: ops/s, single thread, \(seconds) s per measurement")
        var ring = KeyRing()
        for _ in 0..<3 { try ring.rotate() }  // four keys: the lookup is part of the cost
        let context = Array("notes/42/description".utf8)
        let gcmKey = SymmetricKey(size: .bits256)
        print(
            KeyBenchmark.padded("size", 8, left: true) + KeyBenchmark.padded("AES.GCM.seal", 14)
                + KeyBenchmark.padded("seal", 10)
                + KeyBenchmark.padded("open", 10) + KeyBenchmark.padded("seal/gcm", 10)
                + KeyBenchmark.padded("open/gcm", 10)
                + KeyBenchmark.padded("GCM-SIV seal", 14) + KeyBenchmark.padded("seal/siv", 10)
                + KeyBenchmark.padded("GCM-SIV open", 14) + KeyBenchmark.padded("open/siv", 10))
        for size in [64, 1024] {
            let plaintext = Data((0..<size).map { UInt8(truncatingIfNeeded: $0) })
            let sealed = try ring.seal(plaintext, context: context)
            let (seal, gcmForSeal) = try KeyBenchmark.compare(
                seconds, { _ = try ring.seal(plaintext, context: context) },
                { _ = try AES.GCM.seal(plaintext, using: gcmKey) })
            let (open, gcmForOpen) = try KeyBenchmark.compare(
                seconds, { _ = try ring.open(sealed, context: context) },
                { _ = try AES.GCM.seal(plaintext, using: gcmKey) })
            // The primitive alone: swift-crypto's AES-GCM-SIV seal, with a
            // random nonce as the format uses, and nothing of Coffer's.
            let sivKey = SymmetricKey(size: .bits256)
            let (_, siv) = try KeyBenchmark.compare(
                seconds, { _ = try ring.seal(plaintext, context: context) },
                {
                    _ = try AES.GCM._SIV.seal(
                        plaintext, using: sivKey, nonce: AES.GCM._SIV.Nonce(), authenticating: context)
                })
            let sivSealed = try AES.GCM._SIV.seal(
                plaintext, using: sivKey, nonce: AES.GCM._SIV.Nonce(), authenticating: context
            ).combined
            let (_, sivOpen) = try KeyBenchmark.compare(
                seconds, { _ = try ring.open(sealed, context: context) },
                {
                    _ = try AES.GCM._SIV.open(
                        AES.GCM._SIV.SealedBox(combined: sivSealed), using: sivKey, authenticating: context)
                })
            let gcm = max(gcmForSeal, gcmForOpen)
            print(
                KeyBenchmark.padded("\(size) B", 8, left: true) + KeyBenchmark.padded(String(format: "%.0f", gcm), 14)
                    + KeyBenchmark.padded(String(format: "%.0f", seal), 10)
                    + KeyBenchmark.padded(String(format: "%.0f", open), 10)
                    + KeyBenchmark.padded(String(format: "%.2f×", seal / gcm), 10)
                    + KeyBenchmark.padded(String(format: "%.2f×", open / gcm), 10)
                    + KeyBenchmark.padded(String(format: "%.0f", siv), 14)
                    + KeyBenchmark.padded(String(format: "%.2f×", seal / siv), 10)
                    + KeyBenchmark.padded(String(format: "%.0f", sivOpen), 14)
                    + KeyBenchmark.padded(String(format: "%.2f×", open / sivOpen), 10))
        }
        let start = Date()
        _ = try KeyRingFile(keyRing: ring, secret: .password(Array("benchmark".utf8)))
        print(
            String(
                format: "key ring lock with the default scrypt (N=2^17, r=8, p=1): %.2f s",
                Date().timeIntervalSince(start)))
    }
}
#endif
