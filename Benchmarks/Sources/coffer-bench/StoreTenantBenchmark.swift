#if canImport(Glibc)
import Coffer
import CofferStore
import Crypto
import Foundation
import GRDB
import Glibc

/// `coffer-bench store-tenants [--tenants N] [--per-tenant M] [--dir DIR]`:
/// a table kept per tenant (docs/store.md, "Tenants") holding N×M
/// records, put (in batches of 1,000, the tenants interleaved as a
/// server's requests arrive) and got (20,000 at random), beside the same
/// records in one tenant in the same run (target ≥ 0.8×); and the memory
/// the cache of opened tenants' keys takes at N tenants (target ≤ 64 MiB),
/// as resident memory with the cache as the puts and gets left it (each
/// tenant's keys with the index keys derived from them) less with it
/// emptied.
enum StoreTenantBenchmark {
    static func schema() throws -> StoreSchema {
        var table = try StoreBenchmark.schema().tables[0]
        table.fields.insert(.init(name: "org", type: .text), at: 1)
        table.tenant = "org"
        return try StoreSchema(tables: [table])
    }

    static func run(tenants: Int, perTenant: Int, directory: String) throws {
        let folder = directory + "/coffer-store-tenants-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let rows = tenants * perTenant
        print(
            "coffer-bench store-tenants: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(rows) records, \(folder)"
        )
        let secret = UnlockSecret.key(SymmetricKey(size: .bits256))
        var figures: [(put: Double, get: Double)] = []
        for (label, count) in [("1 tenant", 1), ("\(tenants) tenants", tenants)] {
            let store = try RecordStore.create(
                sqlite: folder + "/\(count).sqlite", schema: try schema(), secret: secret, rollbackGuard: nil)
            store.tenantKeyCacheLimit = max(count, 1)
            let put = try StoreBenchmark.measure {
                for start in stride(from: 0, to: rows, by: 1000) {
                    let batch = (start..<min(rows, start + 1000)).map { index -> StoreRecord in
                        var record = StoreBenchmark.record(index)
                        record["org"] = .text("t\(index % count)")
                        return record
                    }
                    try store.put(contentsOf: batch, into: "people")
                }
            }
            var generator = SystemRandomNumberGenerator()
            let ids = (0..<20_000).map { _ in Int64.random(in: 1...Int64(rows), using: &generator) }
            let get = try StoreBenchmark.measure {
                for id in ids { _ = try store.get("people", id: .integer(id)) }
            }
            figures.append((Double(rows) / put.wall, Double(ids.count) / get.wall))
            print(
                String(
                    format: "%-15@ put %8.0f records/s   get %8.0f records/s", label, figures.last!.put,
                    figures.last!.get))
            if count > 1 {
                // The cache as the puts and gets left it, then emptied.
                trimHeap()
                let full = residentKiB()
                store.tenantKeyCacheLimit = 0
                trimHeap()
                let empty = residentKiB()
                print(
                    String(
                        format: "tenant key cache at %d tenants: %.1f MiB resident (target ≤ 64 MiB)", count,
                        Double(full - empty) / 1024))
            }
            try store.close()
        }
        print(
            String(
                format: "%d tenants against 1: put %.2f×, get %.2f× (target ≥ 0.8× each)", tenants,
                figures[1].put / figures[0].put, figures[1].get / figures[0].get))
        // The anchor: plain SQLite, the same rows and tenants in the clear,
        // an SQL index on the tenant as the store keeps one.
        var plain: [Double] = []
        for count in [1, tenants] {
            let path = folder + "/plain-\(count).sqlite"
            let pool = try DatabasePool(path: path)
            try pool.write { db in
                try db.execute(
                    sql:
                        "CREATE TABLE people (id INTEGER PRIMARY KEY NOT NULL, org TEXT, city TEXT, note TEXT, email TEXT) STRICT; CREATE INDEX people_org ON people (org); CREATE INDEX people_email ON people (email)"
                )
            }
            let insert = try StoreBenchmark.insert(
                rows: rows, into: pool, "INSERT INTO people (org, city, note, email) VALUES (?, ?, ?, ?)"
            ) { index in
                let record = StoreBenchmark.record(index)
                return ["t\(index % count)", record["city"]!.text, record["note"]!.text, record["email"]!.text]
            }
            plain.append(Double(rows) / insert.wall)
            StoreBenchmark.remove(pool, at: path)
        }
        print(
            String(
                format: "anchor: plain SQLite insert, 1 tenant %.0f rows/s, %d tenants %.0f rows/s: %.2f×", plain[0],
                tenants, plain[1], plain[1] / plain[0]))
    }

    /// glibc's malloc_trim(0), found at run time (the Glibc module does not
    /// export it): freed heap pages go back, so resident memory measures
    /// what is held.
    static func trimHeap() {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        typealias Trim = @convention(c) (Int) -> Int32
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
    }

    /// The process's resident memory in KiB (/proc/self/statm).
    static func residentKiB() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024 : 0
    }
}
#endif
