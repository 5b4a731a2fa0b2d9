#if canImport(Glibc)
import Foundation
import Glibc

/// `coffer-bench store-import [--rows 50000,1000000] [--dir DIR] [--coffer PATH]`:
/// `coffer store put` of N JSON lines (the store benchmark's rows: a clear
/// city, a sealed note, a sealed email with a 32-bit blind index) as a user
/// runs it — a new process that unlocks the store with its passphrase
/// (scrypt), reads the file, seals, writes, and prints every key to a file —
/// beside a Python script that loads the same file with sqlite3's
/// `executemany` into a plain table with one index, timed the same way
/// (a whole process: start, read, insert, commit), in the same run. The
/// script also times its `executemany` and commit alone, printed too.
enum ImportBenchmark {
    static func run(rows: [Int], directory: String, coffer: String) throws {
        guard let python = Benchmark.which("python3") else { Benchmark.fail("python3 is not on PATH") }
        let folder = directory + "/coffer-import-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        print("coffer-bench store-import: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(folder)")
        try Data(schema.utf8).write(to: URL(fileURLWithPath: folder + "/schema.json"))
        try Data("import benchmark passphrase\n".utf8).write(to: URL(fileURLWithPath: folder + "/passphrase"))
        chmod(folder + "/passphrase", 0o600)
        try Data(anchor.utf8).write(to: URL(fileURLWithPath: folder + "/anchor.py"))
        for count in rows {
            let records = folder + "/records-\(count).jsonl"
            try write(count, to: records)
            let store = folder + "/store-\(count).sqlite"
            Benchmark.spawn([
                coffer, "store", "init", "--db", store, "--schema", folder + "/schema.json", "--passphrase-file",
                folder + "/passphrase",
            ])
            let put = Benchmark.spawn(
                [
                    coffer, "store", "put", "--db", store, "--passphrase-file", folder + "/passphrase", "--table",
                    "people", records,
                ], stdout: folder + "/keys-\(count).jsonl")
            let keys = (try String(contentsOfFile: folder + "/keys-\(count).jsonl", encoding: .utf8))
                .split(separator: "\n").count
            guard keys == count else { Benchmark.fail("coffer store put printed \(keys) keys for \(count) records") }
            let script = Benchmark.spawn(
                [python, folder + "/anchor.py", records, folder + "/plain-\(count).sqlite"],
                stdout: folder + "/anchor-\(count).txt")
            let insertOnly =
                Double(
                    (try String(contentsOfFile: folder + "/anchor-\(count).txt", encoding: .utf8))
                        .trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan
            let rate = Double(count) / put.seconds
            let anchorRate = Double(count) / script.seconds
            let verdict =
                count >= 1_000_000 ? String(format: "; %@ 100,000 records/s", rate >= 100_000 ? "≥" : "below") : ""
            print(
                String(
                    format:
                        "%8d records  coffer store put %8.0f records/s (%.2f s wall, %.2f s CPU, %d MiB peak, unlock included)   Python sqlite3 %8.0f rows/s (%.2f s)   %.2f× (target ≥ 0.45×)%@",
                    count, rate, put.seconds, put.cpu, put.rss / 1024, anchorRate, script.seconds, rate / anchorRate,
                    verdict))
            print(
                String(
                    format:
                        "                  Python's executemany and commit alone %8.0f rows/s (%.2f s); coffer %.2f× of it",
                    Double(count) / insertOnly, insertOnly, rate / (Double(count) / insertOnly)))
            for name in [records, store, store + "-wal", store + "-shm", folder + "/plain-\(count).sqlite"] {
                unlink(name)
            }
        }
    }

    static let schema = """
        {"tables": [{"name": "people", "primaryKey": "id",
          "fields": [{"name": "id", "type": "integer"}, {"name": "city", "type": "text"},
                     {"name": "note", "type": "text", "sealed": true},
                     {"name": "email", "type": "text", "sealed": true,
                      "indexes": [{"name": "email_exact", "transforms": ["trim", "lowercase"], "bits": 32}]}]}]}
        """

    /// The anchor: the rows read from the same file, then one
    /// `executemany` and its commit into a table with an index on email
    /// (the table made first, as `coffer store init` makes the store's).
    static let anchor = """
        import json, sqlite3, sys, time
        db = sqlite3.connect(sys.argv[2])
        db.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, city TEXT, note TEXT, email TEXT)")
        db.execute("CREATE INDEX people_email ON people (email)")
        db.commit()
        rows = [(r["city"], r["note"], r["email"]) for r in map(json.loads, open(sys.argv[1], encoding="utf-8"))]
        start = time.perf_counter()
        db.executemany("INSERT INTO people (city, note, email) VALUES (?, ?, ?)", rows)
        db.commit()
        print(time.perf_counter() - start)
        """

    /// The store benchmark's rows as JSON lines, emails in sign-up order
    /// (not sorted), as a user's export would have them.
    static func write(_ count: Int, to path: String) throws {
        guard let file = fopen(path, "w") else { Benchmark.fail("cannot write \(path)") }
        defer { fclose(file) }
        var line = ""
        for index in 0..<count {
            let person = (index &* 7_919) % count
            line =
                "{\"city\": \"city \(index % 1000)\", \"note\": \"note number \(index) for the benchmark\", \"email\": \"person\(person)@example.org\"}\n"
            fputs(line, file)
        }
    }
}
#endif
