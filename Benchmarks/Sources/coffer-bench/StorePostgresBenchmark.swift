#if canImport(Glibc)
import Coffer
import CofferStore
import CofferStorePostgres
import Crypto
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// `coffer-bench store-postgres [--rows N]`: the store benchmark's rows on a
/// PostgreSQL server, beside plain postgres-nio holding the same rows in
/// the clear (a table with a B-tree index on email) in the same run:
/// insert throughput (both 256 rows per INSERT, in transactions of 10,000)
/// lookup latency, and reindex and migrate (the clear city column) of
/// every row. The server is the one `scripts/with-postgres` starts
/// (COFFER_TEST_POSTGRES_URL and COFFER_TEST_POSTGRES_PASSWORD_FILE):
///
///     scripts/with-postgres Benchmarks/.build/release/coffer-bench store-postgres
enum StorePostgresBenchmark {
    static func run(rows: Int) throws {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["COFFER_TEST_POSTGRES_URL"],
            let passwordFile = environment["COFFER_TEST_POSTGRES_PASSWORD_FILE"]
        else {
            throw CofferError(.invalidArgument, "run it under scripts/with-postgres (no COFFER_TEST_POSTGRES_URL)")
        }
        let password = try String(contentsOfFile: passwordFile, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        print("coffer-bench store-postgres: \(rows) records, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        let plain = try PlainPostgres(url: url, password: password)
        defer { plain.close() }
        let namespace = "bench_\(getpid())"
        try plain.execute("DROP TABLE IF EXISTS plain_people")
        try plain.execute("CREATE TABLE plain_people (id BIGINT PRIMARY KEY, city TEXT, note TEXT, email TEXT)")
        try plain.execute("CREATE INDEX plain_people_email ON plain_people (email)")
        defer {
            _ = try? plain.execute("DROP TABLE IF EXISTS plain_people")
            _ = try? plain.execute("DROP SCHEMA IF EXISTS \(namespace) CASCADE")
        }
        // The rows in the order people sign up, as in the SQLite benchmark.
        let arrival = StoreBenchmark.arrival(rows: rows)
        let plainInsert = try StoreBenchmark.measure {
            for start in stride(from: 0, to: rows, by: StoreBenchmark.batch) {
                try plain.execute("BEGIN")
                // Several rows per INSERT, as the store writes them.
                for chunk in stride(from: start, to: min(rows, start + StoreBenchmark.batch), by: 256) {
                    let indices = chunk..<min(rows, start + StoreBenchmark.batch, chunk + 256)
                    var values: [StoreValue] = []
                    var tuples: [String] = []
                    for index in indices {
                        let record = StoreBenchmark.record(arrival(index))
                        let base = values.count
                        tuples.append("($\(base + 1), $\(base + 2), $\(base + 3), $\(base + 4))")
                        values += [.integer(Int64(index + 1)), record["city"]!, record["note"]!, record["email"]!]
                    }
                    try plain.execute(
                        "INSERT INTO plain_people (id, city, note, email) VALUES " + tuples.joined(separator: ", "),
                        values)
                }
                try plain.execute("COMMIT")
            }
        }
        let store = try RecordStore.create(
            postgres: url + "?schema=" + namespace, password: password, schema: try StoreBenchmark.schema(),
            secret: .key(SymmetricKey(size: .bits256)))
        let storeInsert = try StoreBenchmark.measure {
            for start in stride(from: 0, to: rows, by: StoreBenchmark.batch) {
                try store.put(
                    contentsOf: (start..<min(rows, start + StoreBenchmark.batch)).map {
                        StoreBenchmark.record(arrival($0))
                    },
                    into: "people")
            }
        }
        StoreBenchmark.reportInsert(plain: plainInsert, store: storeInsert, rows: rows, anchor: "plain PostgreSQL")

        var floor: [Double] = []
        for _ in 0..<2000 {
            let start = DispatchTime.now().uptimeNanoseconds
            try plain.execute("SELECT 1")
            floor.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
        }
        print(
            String(format: "round trip      SELECT 1, waited for, p50 %.0f µs", StoreBenchmark.percentile(floor, 0.5)))
        let times = try StoreBenchmark.lookups(3000, rows: rows, store: store) { email in
            try plain.count("SELECT id, city, note, email FROM plain_people WHERE email = $1", [.text(email)])
        }
        StoreBenchmark.reportLookup(times, anchor: "plain PostgreSQL", target: "500 µs")
        let reindex = try StoreBenchmark.measure { _ = try store.reindex(batchSize: 5000) }
        print(
            String(
                format: "reindex         %d rows in %.1f s (target ≤ 60 s), CPU/wall %.2f", rows, reindex.wall,
                reindex.cpu / reindex.wall))
        // The clear city column sealed in place, with an index of its own.
        let migrate = try StoreBenchmark.measure {
            _ = try store.migrate(
                "people", field: "city", indexes: [.init(name: "city_exact", bits: 8)], batchSize: 5000)
        }
        print(
            String(
                format: "migrate         %d rows in %.1f s (target ≤ 60 s), CPU/wall %.2f", rows, migrate.wall,
                migrate.cpu / migrate.wall))
    }
}

/// One postgres-nio connection, used blocking: the anchor the store is measured against.
final class PlainPostgres {
    let connection: PostgresConnection
    let logger = Logger(label: "coffer-bench.postgres")

    init(url: String, password: String) throws {
        guard let components = URLComponents(string: url), let host = components.host, let user = components.user
        else { throw CofferError(.invalidArgument, "not a postgres:// URL") }
        connection = try PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(),
            configuration: .init(
                host: host, port: components.port ?? 5432, username: user, password: password,
                database: String(components.path.dropFirst()), tls: .disable),
            id: 1, logger: logger
        ).wait()
    }

    func close() { try? connection.close().wait() }

    @discardableResult
    func execute(_ sql: String, _ values: [StoreValue] = []) throws -> PostgresQueryResult {
        var bindings = PostgresBindings()
        for value in values {
            if let number = value.integerValue {
                bindings.append(number)
            } else if let text = value.textValue {
                bindings.append(text)
            } else if let bytes = value.bytesValue {
                bindings.append(ByteBuffer(bytes: bytes))
            } else {
                bindings.appendNull()
            }
        }
        return try connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger).wait()
    }

    func count(_ sql: String, _ values: [StoreValue]) throws -> Int { try execute(sql, values).rows.count }
}
#endif
