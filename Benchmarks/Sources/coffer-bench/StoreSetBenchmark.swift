#if canImport(Glibc)
import Coffer
import CofferStore
import Crypto
import Foundation
import Glibc

/// `coffer-bench store-set [--verify-rows N] [--dir DIR]`: what keeping
/// each table's record set costs a writer (docs/store.md, "The record
/// set"). A single put's latency on SQLite (each its own transaction, as
/// an app writes), the puts per second of one and two writers side by side
/// on PostgreSQL (under scripts/with-postgres), and `verify` of N records.
/// It uses only public API, so `scripts/bench-record-set` runs the same
/// program built against the commit before the digest, in the same run,
/// for the figures without it.
enum StoreSetBenchmark {
    static func run(verifyRows: Int, directory: String) throws {
        let folder = directory + "/coffer-store-set-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        print("coffer-bench store-set: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(folder)")
        let secret = UnlockSecret.key(SymmetricKey(size: .bits256))
        let schema = try StoreBenchmark.schema()

        let store = try RecordStore.create(sqlite: folder + "/puts.sqlite", schema: schema, secret: secret)
        for index in 0..<200 { try store.put(StoreBenchmark.record(index), into: "people") }
        var times: [Double] = []
        for index in 200..<3200 {
            let start = DispatchTime.now().uptimeNanoseconds
            try store.put(StoreBenchmark.record(index), into: "people")
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
        }
        try store.close()
        print(
            String(
                format: "single put      SQLite p50 %.1f µs p99 %.1f µs (3,000 puts, one transaction each)",
                StoreBenchmark.percentile(times, 0.5), StoreBenchmark.percentile(times, 0.99)))

        let environment = ProcessInfo.processInfo.environment
        if let url = environment["COFFER_TEST_POSTGRES_URL"],
            let passwordFile = environment["COFFER_TEST_POSTGRES_PASSWORD_FILE"]
        {
            let password = try String(contentsOfFile: passwordFile, encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            for writers in [1, 2] {
                let namespace = "bench_set_\(getpid())_\(writers)"
                let store = try RecordStore.create(
                    postgres: url + "?schema=" + namespace, password: password, schema: schema, secret: secret)
                let done = Tally()
                let seconds = 8.0
                let until = Date().addingTimeInterval(seconds)
                DispatchQueue.concurrentPerform(iterations: writers) { writer in
                    var count = 0
                    while Date() < until {
                        _ = try? store.put(StoreBenchmark.record(writer * 10_000_000 + count), into: "people")
                        count += 1
                    }
                    done.add(count)
                }
                try store.close()
                print(
                    String(
                        format: "PostgreSQL      %d writer%@ putting one record per transaction: %.0f puts/s",
                        writers, writers == 1 ? "" : "s", Double(done.total) / seconds))
            }
        }

        if verifyRows > 0 {
            let big = try RecordStore.create(sqlite: folder + "/verify.sqlite", schema: schema, secret: secret)
            for start in stride(from: 0, to: verifyRows, by: StoreBenchmark.batch) {
                try big.put(
                    contentsOf: (start..<min(verifyRows, start + StoreBenchmark.batch)).map(StoreBenchmark.record),
                    into: "people")
            }
            var result: StoreVerification?
            let verify = try StoreBenchmark.measure { result = try big.verify(batchSize: 5000) }
            try big.close()
            print(
                String(
                    format: "verify          %d records in %.1f s (target ≤ 60 s), CPU/wall %.2f: %@", verifyRows,
                    verify.wall, verify.cpu / verify.wall, result?.description ?? "-"))
        }
    }
}

/// A count several threads add to.
final class Tally: @unchecked Sendable {  // `count` is read and written under `lock` only
    private let lock = NSLock()
    private var count = 0
    func add(_ value: Int) { lock.withLock { count += value } }
    var total: Int { lock.withLock { count } }
}
#endif
