import Coffer
import Crypto
import Foundation
import GRDB
import Testing

@testable import CofferStore

/// The fast paths of a bulk put against the slow, obvious ones they
/// replace: the row sealer against ``StoreKeys`` one value at a time, the
/// pipeline against a plain map, direct binding against GRDB's own.
@Suite struct StoreInternalsTests {
    static func keys() throws -> StoreKeys {
        var ring = KeyRing()
        try ring.rotate()
        return try StoreKeys(
            storeID: Array(repeating: 7, count: 16), keyRing: ring,
            indexRoots: [1: SymmetricKey(size: .bits256), 2: SymmetricKey(size: .bits256)], current: 2)
    }

    static let table = StoreSchema.Table(
        name: "people", primaryKey: "id",
        fields: [
            .init(name: "id", type: .integer),
            .init(name: "city", type: .text),
            .init(
                name: "note", type: .text, sealed: true, bind: ["city"],
                indexes: [.init(name: "note_words", transforms: [.lowercase], bits: 20, tokens: .words)]),
            .init(
                name: "email", type: .text, sealed: true,
                indexes: [
                    .init(name: "email_exact", transforms: [.trim, .lowercase], bits: 13),
                    .init(
                        name: "email_city", transforms: [.lowercase], bits: 40, with: ["city"],
                        acceptLeakage: "a test of the sealer's widest values, on made-up rows"),
                ]),
        ])

    static let values: [StoreValue] = [
        .text(""), .text(" Ab@Example.ORG "), .text("ÉCOLE straße"), .text("a\u{0}b"), .integer(-3), .null,
        .bytes([0, 1, 2]), .text("x y  z"),
    ]

    /// Every cell opens with the context ``StoreKeys`` builds for it, and
    /// every index value and token entry is the one it computes.
    @Test func rowSealerMatchesStoreKeys() throws {
        let keys = try Self.keys()
        let table = Self.table
        let sealer = try RowSealer(keys: keys, table: table, fields: table.fields.filter(\.sealed), version: 2)
        #expect(sealer.columns == ["coffer_life", "note", "email", "email_exact", "email_city"])
        // The sealed fields are text (or null): a value of another type is refused before sealing.
        let texts = Self.values.map { $0.isNull || $0.type == .text ? $0 : .text("\($0.encoded)") }
        #expect(throws: CofferError.self) {
            try sealer.seal(["note": 5], key: 1, life: [UInt8](repeating: 0, count: 16))
        }
        for (offset, (note, email)) in zip(texts, texts.reversed()).enumerated() {
            let city = Self.values[(offset + 3) % Self.values.count]
            let key = StoreValue.integer(Int64(offset) - 2)
            let record: StoreRecord = ["city": city, "note": note, "email": email]
            let life = (0..<16).map { UInt8(offset * 16 + $0) }
            let (values, tokens) = try sealer.seal(record, key: key, life: life)
            #expect(values[0] == Data(life).databaseValue)
            for (column, field, bound) in [(1, "note", [("city", city)]), (2, "email", [])] {
                guard case .blob(let cell) = values[column].storage else {
                    Issue.record("\(field) is not a sealed cell")
                    continue
                }
                let context = try keys.context(
                    table: "people", column: field, primaryKey: key, life: life, bound: bound)
                #expect(
                    try keys.openCell(Array(cell), context: context, table: "people", column: field) == record[field])
            }
            for (column, index, inputs, transforms, bits) in [
                (3, "email_exact", [email], [IndexTransform.trim, .lowercase], 13),
                (4, "email_city", [email, city], [.lowercase], 40),
            ] {
                let expected = try StoreKeys.indexInput(inputs, transforms: transforms).map {
                    Data(try keys.indexValue($0, table: "people", index: index, bits: bits, version: 2))
                }
                #expect(Data.fromDatabaseValue(values[column]) == expected, "\(index) of row \(offset)")
            }
            let entries = try keys.tokenEntries(
                note, tokens: .words, transforms: [.lowercase], table: "people", index: "note_words", bits: 20,
                version: 2)
            #expect(tokens["note_words"] == entries.map { Data($0) })
        }
    }

    /// A context part over 1 MiB is refused, as ``SealingContext`` refuses it.
    @Test func rowSealerRefusesAnOversizedPart() throws {
        let keys = try Self.keys()
        let sealer = try RowSealer(
            keys: keys, table: Self.table, fields: Self.table.fields.filter(\.sealed), version: 2)
        let huge = StoreValue.text(String(repeating: "a", count: 1 << 20))
        let life = [UInt8](repeating: 9, count: 16)
        #expect(throws: CofferError.self) { try sealer.seal(["city": huge], key: .integer(1), life: life) }
        #expect(throws: CofferError.self) { try sealer.seal(["email": huge], key: .integer(1), life: life) }
        #expect(throws: CofferError.self) { try sealer.seal([:], key: huge, life: life) }
        #expect(throws: CofferError.self) { try sealer.seal([:], key: .integer(1), life: [1, 2]) }
    }

    /// The chunks reach the consumer in order, each whole, whatever the
    /// chunk size; an error in a transform or in the consumer is thrown.
    @Test(arguments: [1, 3, 64, 1000])
    func pipelineKeepsOrder(chunk: Int) throws {
        let items = Array(0..<777)
        var seen: [Int] = []
        try RecordStore.pipeline(
            items, chunk: chunk, map: { $0 * 2 },
            consume: { slice, mapped in
                #expect(mapped == slice.map { $0 * 2 })
                seen += slice
            })
        #expect(seen == items)

        struct Bad: Error {}
        #expect(throws: Bad.self) {
            try RecordStore.pipeline(
                items, chunk: chunk,
                map: {
                    if $0 == 500 { throw Bad() }
                    return $0
                }, consume: { _, _ in })
        }
        var consumed = 0
        #expect(throws: Bad.self) {
            try RecordStore.pipeline(
                items, chunk: chunk, map: { $0 },
                consume: { slice, _ in
                    consumed += slice.count
                    if consumed > 100 { throw Bad() }
                })
        }
        try RecordStore.pipeline(
            [Int](), chunk: chunk, map: { $0 }, consume: { _, _ in Issue.record("nothing to consume") })
    }

    /// Values bound straight to SQLite read back as GRDB binds them: empty
    /// and NUL-holding text, empty and NUL bytes, integers at the edges,
    /// doubles, null; a wrong count and a broken constraint are errors.
    @Test func directBindingRoundTrips() throws {
        let queue = try DatabaseQueue()
        let values: [DatabaseValue] = [
            "".databaseValue, "a\u{0}b".databaseValue, "ÉCOLE".databaseValue, Data().databaseValue,
            Data([0, 0, 1]).databaseValue, Int64.min.databaseValue, Int64.max.databaseValue, 2.5.databaseValue,
            .null,
        ]
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t (n INTEGER PRIMARY KEY, v ANY) STRICT")
            let connection = SQLiteStoreConnection(db: db)
            for (offset, value) in values.enumerated() {
                #expect(
                    try connection.execute("INSERT INTO t (n, v) VALUES (?, ?)", [offset.databaseValue, value]) == 1)
            }
            let stored = try connection.rows("SELECT v FROM t ORDER BY n").map { $0["v"] ?? .null }
            // An empty blob reads back as an empty blob, not null. GRDB
            // reads text up to a NUL, so that one is checked as bytes.
            #expect(
                stored.enumerated().filter { $0.offset != 1 }.map(\.element)
                    == values.enumerated().filter { $0.offset != 1 }.map(\.element))
            #expect(try Data.fetchOne(db, sql: "SELECT CAST(v AS BLOB) FROM t WHERE n = 1") == Data("a\u{0}b".utf8))
            #expect(throws: CofferError.self) {
                try connection.execute("INSERT INTO t (n, v) VALUES (?, ?)", [1.databaseValue])
            }
            #expect(throws: DatabaseError.self) {
                try connection.execute("INSERT INTO t (n, v) VALUES (?, ?)", [0.databaseValue, .null])
            }
            // The statement is left unbound: GRDB runs it again with its own arguments.
            try db.execute(sql: "INSERT INTO t (n, v) VALUES (?, ?)", arguments: [100, "grdb"])
            #expect(try String.fetchOne(db, sql: "SELECT v FROM t WHERE n = 100") == "grdb")
        }
    }

    /// Values up to 64 bytes are copied as they are bound and larger texts
    /// and blobs are lent, at most 64 of them: a row of 120 values (73 texts
    /// and blobs over 64 bytes, 17 within) reads back value for value, each
    /// in its own column.
    @Test func copiedAndLentValuesLandInTheirOwnColumns() throws {
        let queue = try DatabaseQueue()
        let values: [DatabaseValue] = (0..<120).map { column in
            let size = [0, 1, 64, 65, 300, 5000][column % 6] + column
            switch column % 4 {
            case 0: return String(repeating: "\(column % 10)", count: size).databaseValue
            case 1: return Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ column) }).databaseValue
            case 2: return ("é\u{0}" + String(repeating: "x", count: size)).databaseValue
            default: return column.isMultiple(of: 3) ? .null : Int64(column * 1000).databaseValue
            }
        }
        let names = (0..<120).map { "c\($0)" }
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE wide (\(names.map { "\($0) ANY" }.joined(separator: ", "))) STRICT")
            let connection = SQLiteStoreConnection(db: db)
            let placeholders = Array(repeating: "?", count: 120).joined(separator: ", ")
            #expect(try connection.execute("INSERT INTO wide VALUES (\(placeholders))", values) == 1)
            let row = try #require(try connection.firstRow("SELECT * FROM wide", []))
            for (column, (stored, value)) in zip(row, values).enumerated() {
                if case .string(let text) = value.storage {
                    // GRDB reads text up to a NUL: compare the bytes.
                    let bytes = try Data.fetchOne(db, sql: "SELECT CAST(c\(column) AS BLOB) FROM wide")
                    #expect(bytes == Data(text.utf8), "column \(column)")
                } else {
                    #expect(stored == value, "column \(column)")
                }
            }
        }
    }
}
