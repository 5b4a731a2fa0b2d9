#if canImport(Glibc)
import Coffer
import CofferStore
import Crypto
import Foundation
import GRDB
import Glibc

/// `coffer-bench store [--rows N] [--dir DIR]`: a CofferStore of N records
/// (one clear field, one sealed, one sealed and indexed) beside plain GRDB
/// holding the same rows in the clear, in the same run: insert throughput,
/// lookup latency by the blind index against lookup by an SQL index on
/// the clear column, reindex and migrate of every row, and bytes per
/// sealed field and per index entry.
enum StoreBenchmark {
    static let batch = 10_000

    static func run(rows: Int, directory: String) throws {
        let folder = directory + "/coffer-store-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        print("coffer-bench store: \(rows) records, \(ProcessInfo.processInfo.activeProcessorCount) cores, \(folder)")
        let secret = UnlockSecret.key(SymmetricKey(size: .bits256))
        let schema = try Self.schema()
        let record = Self.record

        // Plain GRDB: the same rows in the clear, an SQL index on email,
        // inserted in the order people sign up (emails in no sorted order),
        // and once more with the emails arriving in their sorted runs.
        let arrival = Self.arrival(rows: rows)
        let plainPath = folder + "/plain.sqlite"
        let plain = try plainTable(path: plainPath)
        let plainInsert = try insert(rows: rows, into: plain, order: arrival)
        let sortedPath = folder + "/plain-in-order.sqlite"
        let sorted = try plainTable(path: sortedPath)
        let sortedInsert = try insert(rows: rows, into: sorted, order: { $0 })
        remove(sorted, at: sortedPath)

        let shapedInsert = try shapedFloor(rows: rows, path: folder + "/shaped.sqlite")

        let storePath = folder + "/store.sqlite"
        let store = try RecordStore.create(sqlite: storePath, schema: schema, secret: secret)
        let storeInsert = try measure {
            for start in stride(from: 0, to: rows, by: batch) {
                try store.put(
                    contentsOf: (start..<min(rows, start + batch)).map { record(arrival($0)) }, into: "people")
            }
        }
        reportInsert(plain: plainInsert, store: storeInsert, rows: rows, anchor: "plain GRDB")
        print(
            String(
                format:
                    "                plain GRDB, emails arriving in sorted runs (person1, person2, …) %8.0f rows/s; CofferStore %.2f× of it",
                Double(rows) / sortedInsert.wall, sortedInsert.wall / storeInsert.wall))
        print(
            String(
                format:
                    "SQLite floor    plain GRDB, the store's row shape (random bytes, random indexed value) %8.0f rows/s; CofferStore %.2f× of it",
                Double(rows) / shapedInsert.wall, shapedInsert.wall / storeInsert.wall))

        // Lookups of random existing emails: the whole find, candidates opened and checked.
        var empty: [Double] = []
        for _ in 0..<5000 {
            let start = DispatchTime.now().uptimeNanoseconds
            try plain.read { _ in }
            empty.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
        }
        print(String(format: "read floor      an empty GRDB read transaction p50 %.1f µs", percentile(empty, 0.5)))
        let times = try lookups(5000, rows: rows, store: store) { email in
            try plain.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT id, city, note, email FROM people WHERE email = ?", arguments: [email]
                ).count
            }
        }
        reportLookup(times, anchor: "plain GRDB", target: "50 µs")

        let reindex = try measure { _ = try store.reindex(batchSize: 5000) }
        print(
            String(
                format: "reindex         %d rows in %.1f s (target ≤ 60 s), CPU/wall %.2f", rows, reindex.wall,
                reindex.cpu / reindex.wall))

        // Migrate: the plain database adopted, its email column sealed and indexed in place.
        try plain.close()
        let clearSchema = try StoreSchema(tables: [
            .init(
                name: "people", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer), .init(name: "city", type: .text),
                    .init(name: "note", type: .text),
                    .init(name: "email", type: .text),
                ])
        ])
        let adopted = try RecordStore.adopt(sqlite: plainPath, schema: clearSchema, secret: secret)
        let migrate = try measure {
            _ = try adopted.migrate(
                "people", field: "email",
                indexes: [.init(name: "email_exact", transforms: [.trim, .lowercase], bits: 32)],
                batchSize: 5000)
        }
        print(
            String(
                format: "migrate         %d rows in %.1f s (target ≤ 60 s), CPU/wall %.2f", rows, migrate.wall,
                migrate.cpu / migrate.wall))

        let sizes = try DatabaseQueue(path: storePath).read { db in
            (
                try Double.fetchOne(db, sql: "SELECT avg(length(note)) FROM people")!,
                try Double.fetchOne(db, sql: "SELECT avg(length(CAST(note AS BLOB))) FROM people")!,
                try Double.fetchOne(db, sql: "SELECT avg(length(email_exact)) FROM people")!
            )
        }
        let plainNote = Double(("note number \(rows / 2) for the benchmark").utf8.count)
        print(
            String(
                format:
                    "bytes           sealed note %.1f B for %.1f B of text (+%.1f); index entry %.0f B (2 version + 4 of 32 bits)",
                sizes.1, plainNote, sizes.1 - plainNote, sizes.2))
        _ = sizes.0
    }

    /// A sealed text cell's bytes beyond the text's (docs/store.md).
    static var sealedOverhead: Int {
        get throws { try KeyRing().seal(Array("tx".utf8), context: Array("c".utf8)).count - 1 }
    }

    /// One clear field, one sealed, one sealed and indexed (32 bits).
    static func schema() throws -> StoreSchema {
        try StoreSchema(tables: [
            .init(
                name: "people", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer),
                    .init(name: "city", type: .text),
                    .init(name: "note", type: .text, sealed: true),
                    .init(
                        name: "email", type: .text, sealed: true,
                        indexes: [.init(name: "email_exact", transforms: [.trim, .lowercase], bits: 32)]),
                ])
        ])
    }

    @Sendable static func record(_ index: Int) -> StoreRecord {
        [
            "city": .text("city \(index % 1000)"), "note": .text("note number \(index) for the benchmark"),
            "email": .text("person\(index)@example.org"),
        ]
    }

    static func reportInsert(
        plain: (wall: Double, cpu: Double), store: (wall: Double, cpu: Double), rows: Int, anchor: String
    ) {
        print(
            String(
                format: "insert          %@ %8.0f rows/s   CofferStore %8.0f rows/s   %.2f× (target ≥ 0.5×)",
                anchor, Double(rows) / plain.wall, Double(rows) / store.wall, plain.wall / store.wall))
        print(
            String(
                format: "                CPU/wall: %@ %.2f, CofferStore %.2f (cores used)", anchor,
                plain.cpu / plain.wall,
                store.cpu / store.wall))
    }

    /// Finds of random existing emails, the anchor's and the store's in
    /// turn (the store's is the whole find: candidates fetched, opened and
    /// compared); each must find exactly one row.
    static func lookups(_ count: Int, rows: Int, store: RecordStore, anchor: (String) throws -> Int) throws
        -> (anchor: [Double], store: [Double])
    {
        var times: (anchor: [Double], store: [Double]) = ([], [])
        for _ in 0..<count {
            let email = "person\(Int.random(in: 0..<rows))@example.org"
            let start = DispatchTime.now().uptimeNanoseconds
            let found = try anchor(email)
            let middle = DispatchTime.now().uptimeNanoseconds
            let records = try store.find("people", where: "email", equals: .text(email))
            let end = DispatchTime.now().uptimeNanoseconds
            guard found == 1, records.count == 1 else { throw CofferError(.malformed, "lookup of \(email) failed") }
            times.anchor.append(Double(middle - start) / 1000)
            times.store.append(Double(end - middle) / 1000)
        }
        return times
    }

    static func reportLookup(_ times: (anchor: [Double], store: [Double]), anchor: String, target: String) {
        print(
            String(
                format:
                    "lookup          %@ p50 %.1f µs p99 %.1f µs   CofferStore p50 %.1f µs p99 %.1f µs (target p50 ≤ %@)",
                anchor, percentile(times.anchor, 0.5), percentile(times.anchor, 0.99), percentile(times.store, 0.5),
                percentile(times.store, 0.99), target))
    }

    static func measure(_ body: () throws -> Void) throws -> (wall: Double, cpu: Double) {
        let start = Date()
        let cpuStart = cpuSeconds()
        try body()
        return (Date().timeIntervalSince(start), cpuSeconds() - cpuStart)
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
    }

    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }
}

extension StoreValue {
    var text: String? { textValue }
}
#endif
