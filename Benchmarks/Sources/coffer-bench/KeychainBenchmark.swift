#if canImport(Glibc)
import Coffer
import CofferKeychain
import Crypto
import Foundation

/// `coffer-bench keychain`: FileKeychain figures — unlock time with the
/// default scrypt, write latency p50/p99 and read p50 over 1,000 items
/// (each write: lock, re-read, re-seal, fsync, rename, fsync the folder),
/// and the file size per 1,000 password items.
enum KeychainBenchmark {
    static func run(directory: String) throws {
        let folder = directory + "/coffer-bench-keychain-\(getpid())"
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/bench.keychain"
        let password = UnlockSecret.password(Array("benchmark passphrase".utf8))
        _ = try FileKeychain.create(path: path, secret: password)
        let start = Date()
        let keychain = try FileKeychain.open(path: path, secret: password)
        let unlock = Date().timeIntervalSince(start)
        let (writes, reads) = try measure(keychain)
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        print("coffer-bench keychain: FileKeychain in \(directory), 1,000 password items (24-byte secrets)")
        print(String(format: "unlock (scrypt N=2^17 r=8 p=1): %.2f s", unlock))
        report(writes: writes, reads: reads)
        print("file size with 1,000 items: \(size) bytes (\(size / 1000) bytes per item)")
    }

    /// Adds 1,000 password items, timing each, and reads every tenth back.
    static func measure(_ keychain: any Keychain) throws -> (writes: [Double], reads: [Double]) {
        var writes: [Double] = []
        var reads: [Double] = []
        var start = Date()
        for index in 0..<1000 {
            start = Date()
            try keychain.add(
                .password(service: "bench", account: "account-\(index)", label: "item \(index)"),
                data: SecretBytes(Array("a secret of 24 bytes....".utf8)))
            writes.append(Date().timeIntervalSince(start))
            if index % 10 == 0 {
                start = Date()
                _ = try keychain.copyData(.password(service: "bench", account: "account-\(index)"))
                reads.append(Date().timeIntervalSince(start))
            }
        }
        return (writes, reads)
    }

    static func report(writes: [Double], reads: [Double]) {
        func percentile(_ values: [Double], _ p: Double) -> Double {
            values.sorted()[min(values.count - 1, Int(Double(values.count) * p))]
        }
        print(
            String(
                format: "write p50 %.2f ms, p99 %.2f ms (the keychain growing from 0 to 1,000 items)",
                1000 * percentile(writes, 0.5), 1000 * percentile(writes, 0.99)))
        print(String(format: "read p50 %.3f ms", 1000 * percentile(reads, 0.5)))
    }

    #if SecretService
    /// `coffer-bench keychain --secret-service`: the same items in the
    /// session's Secret Service (run it under scripts/with-secret-service),
    /// in a keychain name of its own, deleted afterwards.
    static func runSecretService() throws {
        let keychain = try SecretServiceKeychain(name: "coffer-bench-\(getpid())")
        defer { try? keychain.delete(.password()) }
        let (writes, reads) = try measure(keychain)
        print(
            "coffer-bench keychain: SecretServiceKeychain (the session's Secret Service), 1,000 password items (24-byte secrets)"
        )
        report(writes: writes, reads: reads)
    }
    #endif
}
#endif
