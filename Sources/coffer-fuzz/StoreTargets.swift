import Coffer
import CofferStore
import Foundation

/// Targets for what the store reads from its users and its database: the
/// schema file, JSON-lines records, anchor states, PostgreSQL URLs.
enum StoreTargets {
    static let all: [FuzzTarget] = [schema, records, anchorState, postgresURL]

    static func isCoffer(_ error: any Error) -> Bool { error is CofferError }

    static let schemaJSON = #"""
        {"tables": [{"name": "presents", "primaryKey": "id",
          "fields": [{"name": "id", "type": "integer"},
                     {"name": "to", "type": "text"},
                     {"name": "price", "type": "double"},
                     {"name": "given", "type": "date"},
                     {"name": "photo", "type": "bytes", "sealed": true},
                     {"name": "description", "type": "text", "sealed": true, "bind": ["to"],
                      "indexes": [{"name": "words", "tokens": "words", "transforms": ["nfkc", "lowercase"], "bits": 16}]},
                     {"name": "email", "type": "text", "sealed": true,
                      "indexes": [{"name": "email_exact", "transforms": ["trim", "lowercase"], "bits": 16,
                                   "with": ["to"]}]}]}]}
        """#

    static let table = try! StoreSchema(json: Data(schemaJSON.utf8)).tables[0]

    static let schema = FuzzTarget(
        name: "store-schema", summary: "the store's schema file and index transforms",
        run: { bytes in
            FuzzTarget.expect("StoreSchema(json:)", isCoffer) { _ = try StoreSchema(json: bytes) }
            if let text = String(bytes: bytes, encoding: .utf8) {
                FuzzTarget.expect("IndexTransform(parsing:)", isCoffer) { _ = try IndexTransform(parsing: text) }
            }
        },
        seeds: { [Array(schemaJSON.utf8), Array("split:,".utf8), Array("truncate:4".utf8)] })

    /// Each line a record of ``table``, as `coffer store import` reads them.
    static let records = FuzzTarget(
        name: "store-records", summary: "JSON-lines records, read against a table of every field type",
        run: { bytes in
            for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
                let line = Array(line)
                line.withUnsafeBufferPointer { buffer in
                    FuzzTarget.expect("RecordJSON.record", isCoffer) {
                        _ = try RecordJSON.record(utf8: buffer, table: table)
                    }
                }
                FuzzTarget.expect("RecordJSON.object", isCoffer) { _ = try RecordJSON.object(utf8: line) }
            }
        },
        seeds: {
            [
                #"{"id": 1, "to": "Grandma", "price": 12.5, "given": 1700000000000, "photo": "AAEC", "description": "a knitted scarf", "email": " A@B.C "}"#,
                #"{"id": -9223372036854775808, "to": "\ud83d\ude00\n", "price": 1e308, "description": null}"#,
            ].map { Array($0.utf8) }
        })

    static let anchorState = FuzzTarget(
        name: "anchor-state", summary: "a store's anchored state (anchor files, keychain items, server answers)",
        run: { bytes in
            FuzzTarget.expect("StoreAnchorState(json:)", isCoffer) { _ = try StoreAnchorState(json: Data(bytes)) }
        },
        seeds: {
            let state = StoreAnchorState(
                epoch: 3, sequences: ["presents": [UInt64](repeating: 1, count: StoreAnchorState.shardsPerTable)],
                digest: String(repeating: "ab", count: 32))
            return [(try? state.json()).map { Array($0) }].compactMap { $0 }
        })

    static let postgresURL = FuzzTarget(
        name: "postgres-url", summary: "PostgreSQL URLs (--db, --database)",
        run: { bytes in
            guard let text = String(bytes: bytes, encoding: .utf8) else { return }
            FuzzTarget.expect("PostgresURL", isCoffer) { _ = try PostgresURL(text, what: "a fuzzed URL") }
        },
        seeds: {
            [
                "postgres://coffer@localhost:5432/app?schema=shop&sslmode=verify-full&sslrootcert=/etc/ca.pem",
                "postgresql://u@[::1]/d", "postgres://a%40b@host/db?sslmode=disable",
            ].map { Array($0.utf8) }
        })
}
