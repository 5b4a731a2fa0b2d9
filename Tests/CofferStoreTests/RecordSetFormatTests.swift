import Crypto
import Foundation
import GRDB
import Testing

@testable import Coffer
@testable import CofferStore

/// The record set's elements, sums and sealed shards against vectors made
/// by Python's hmac, hashlib and cryptography
/// (scripts/make-record-set-vectors.py; docs/store.md, "The record set").
@Suite struct RecordSetFormatTests {
    /// A column as the vectors give it: kind and value.
    struct Column: Decodable {
        let value: DatabaseValue
        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            value = try Self.read(&container)
        }

        /// A kind, then its value (none for null), from `container`.
        static func read(_ container: inout any UnkeyedDecodingContainer) throws -> DatabaseValue {
            switch try container.decode(String.self) {
            case "integer": try container.decode(Int64.self).databaseValue
            case "real": try container.decode(Double.self).databaseValue
            case "text": try container.decode(String.self).databaseValue
            case "bytes": Data(StoreFormatTests.bytes(try container.decode(String.self))).databaseValue
            default: .null
            }
        }
    }
    struct Cell: Decodable {
        let name: String
        let value: DatabaseValue
        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            name = try container.decode(String.self)
            value = try Column.read(&container)
        }
    }
    struct Row: Decodable {
        let key: Column, life: Column
        let cells: [Cell]
        let element_hex: String
    }
    struct Shard: Decodable {
        let key_hex: String, key_id: UInt32, number: Int, count: UInt64, sequence: UInt64
        let context_hex: String, sealed_hex: String
    }
    struct Vectors: Decodable {
        let root_hex: String, store_id_hex: String, table: String, table_key_hex: String
        let rows: [Row]
        let sum_hex: String, sum_without_second_hex: String
        let shard: Shard
    }

    static func load() throws -> Vectors {
        let url = Bundle.module.resourceURL!.appendingPathComponent("store-v1/record-set.json")
        return try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }

    /// A table whose sealed fields are the cells a row names (in its order).
    static func table(_ vectors: Vectors, key: DatabaseValue) throws -> StoreSchema.Table {
        var names: [String] = []
        for row in vectors.rows { for cell in row.cells where !names.contains(cell.name) { names.append(cell.name) } }
        let keyType: StoreSchema.FieldType = if case .string = key.storage { .text } else { .integer }
        return StoreSchema.Table(
            name: vectors.table, primaryKey: "id",
            fields: [.init(name: "id", type: keyType)] + names.map { .init(name: $0, type: .text, sealed: true) })
    }

    @Test func elementsAndSumsMatchPython() throws {
        let vectors = try Self.load()
        let key = RecordSetKey(
            root: SymmetricKey(data: StoreFormatTests.bytes(vectors.root_hex)),
            storeID: StoreFormatTests.bytes(vectors.store_id_hex))
        var tally = RecordSetTally()
        var elements: [RecordSetSum] = []
        for row in vectors.rows {
            let table = try Self.table(vectors, key: row.key.value)
            var columns: [String: DatabaseValue] = [StoreSQL.lifeColumn: row.life.value]
            for cell in row.cells { columns[cell.name] = cell.value }
            let element = try key.element(table, key: row.key.value, migrating: nil) { columns[$0] }
            #expect(Hex.encode(element.bytes) == row.element_hex)
            elements.append(element)
            tally.add(element)
        }
        #expect(Hex.encode(tally.sum.bytes) == vectors.sum_hex)
        #expect(tally.count == UInt64(vectors.rows.count))
        tally.remove(elements[1])
        #expect(Hex.encode(tally.sum.bytes) == vectors.sum_without_second_hex)
        // One changed byte of a cell, or another life, is another element.
        let row = vectors.rows[0]
        let table = try Self.table(vectors, key: row.key.value)
        var columns: [String: DatabaseValue] = [StoreSQL.lifeColumn: row.life.value]
        for cell in row.cells { columns[cell.name] = cell.value }
        columns[StoreSQL.lifeColumn] = Data(repeating: 0, count: 16).databaseValue
        #expect(try key.element(table, key: row.key.value, migrating: nil) { columns[$0] } != elements[0])
    }

    @Test func theSealedShardOpensAndSumsWrapAround() throws {
        let vectors = try Self.load()
        let storeID = StoreFormatTests.bytes(vectors.store_id_hex)
        let ring = KeyRing(entries: [
            KeyRing.Entry(
                id: vectors.shard.key_id, state: .primary, created: 0,
                key: SymmetricKey(data: StoreFormatTests.bytes(vectors.shard.key_hex)))
        ])
        let keys = try StoreKeys(
            storeID: storeID, keyRing: ring, indexRoots: [1: SymmetricKey(size: .bits256)], current: 1)
        #expect(
            Hex.encode(
                try RecordSetDigest.context(storeID: storeID, table: vectors.table, shard: vectors.shard.number).bytes)
                == vectors.shard.context_hex)
        let shard = try RecordSetDigest.open(
            Data(StoreFormatTests.bytes(vectors.shard.sealed_hex)).databaseValue, table: vectors.table,
            number: vectors.shard.number, keys: keys)
        #expect(shard.tally.count == vectors.shard.count)
        #expect(shard.sequence == vectors.shard.sequence)
        #expect(Hex.encode(shard.tally.sum.bytes) == vectors.sum_hex)
        // Under another shard's number it does not open.
        #expect(throws: CofferError.self) {
            _ = try RecordSetDigest.open(
                Data(StoreFormatTests.bytes(vectors.shard.sealed_hex)).databaseValue, table: vectors.table,
                number: vectors.shard.number + 1, keys: keys)
        }
        // 2^256 − 1 + 1 wraps to 0, and 0 − 1 back.
        var top = RecordSetSum()
        top.limbs = [.max, .max, .max, .max]
        var one = RecordSetSum()
        one.limbs[3] = 1
        #expect(top + one == RecordSetSum())
        #expect(RecordSetSum() - one == top)
    }
}
