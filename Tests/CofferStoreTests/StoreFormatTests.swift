import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import Coffer
@testable import CofferStore

/// CofferStore's cells and blind indexes against vectors made by Python's
/// cryptography (scripts/make-store-vectors.py), and their refusals.
@Suite struct StoreFormatTests {
    struct Value: Decodable {
        let kind: String
        let text: String?, number: Int64?, double: Double?

        enum CodingKeys: String, CodingKey { case kind, value }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            kind = try container.decode(String.self, forKey: .kind)
            number = kind == "integer" || kind == "date" ? try container.decode(Int64.self, forKey: .value) : nil
            double = kind == "double" ? try container.decode(Double.self, forKey: .value) : nil
            text = number == nil && double == nil ? try container.decodeIfPresent(String.self, forKey: .value) : nil
        }
        var store: StoreValue {
            switch kind {
            case "text": .text(text!)
            case "integer": .integer(number!)
            case "date": .date(milliseconds: number!)
            case "double": .double(double!)
            case "bytes": .bytes(StoreFormatTests.bytes(text!))
            default: .null
            }
        }
    }
    struct Bound: Decodable {
        let name: String, kind: String
        let value: Value
        enum CodingKeys: String, CodingKey { case name }
        init(from decoder: any Decoder) throws {
            name = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .name)
            value = try Value(from: decoder)
            kind = value.kind
        }
    }
    struct Cell: Decodable {
        let title: String, table: String, column: String
        let primary_key: Value
        let life_hex: String
        let bound: [Bound]
        let plaintext: Value
        let context_hex: String, sealed_hex: String
    }
    struct Index: Decodable {
        let title: String, table: String, index: String
        let transforms: [String]
        let bits: Int
        let version: UInt16
        let values: [Value]
        let texts: [String]?
        let index_hex: String?
    }
    struct CellKey: Decodable {
        let id: UInt32
        let key_hex: String
    }
    struct Vectors: Decodable {
        let store_id_hex: String
        let cell_key: CellKey
        let index_roots: [String: String]
        let cells: [Cell]
        let indexes: [Index]
        let tokens: [Token]
    }

    struct Token: Decodable {
        let title, table, index, tokens, value: String
        let transforms: [String]
        let bits: Int
        let version: UInt16
        let tokens_out: [String]
        let entries_hex: [String]
    }

    static func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return result
    }

    static func load() throws -> (Vectors, StoreKeys) {
        let url = Bundle.module.resourceURL!.appendingPathComponent("store-v1/vectors.json")
        let vectors = try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
        let ring = KeyRing(entries: [
            KeyRing.Entry(
                id: vectors.cell_key.id, state: .primary, created: 0,
                key: SymmetricKey(data: bytes(vectors.cell_key.key_hex)))
        ])
        var roots: [UInt16: SymmetricKey] = [:]
        for (version, hex) in vectors.index_roots { roots[UInt16(version)!] = SymmetricKey(data: bytes(hex)) }
        let keys = try StoreKeys(storeID: bytes(vectors.store_id_hex), keyRing: ring, indexRoots: roots, current: 2)
        return (vectors, keys)
    }

    @Test func cellVectorsOpenAndReproduce() throws {
        let (vectors, keys) = try Self.load()
        #expect(vectors.cells.count == 7)
        for cell in vectors.cells {
            let life = Self.bytes(cell.life_hex)
            let context = try keys.context(
                table: cell.table, column: cell.column, primaryKey: cell.primary_key.store, life: life,
                bound: cell.bound.map { ($0.name, $0.value.store) })
            #expect(context.bytes == Self.bytes(cell.context_hex), "\(cell.title)")
            let sealed = Self.bytes(cell.sealed_hex)
            #expect(
                try keys.openCell(sealed, context: context, table: cell.table, column: cell.column)
                    == cell.plaintext.store, "\(cell.title)")
            let again = try SealedValue.seal(
                cell.plaintext.store.encoded, keyID: vectors.cell_key.id,
                key: SymmetricKey(data: Self.bytes(vectors.cell_key.key_hex)), context: context.bytes,
                nonce: try AES.GCM._SIV.Nonce(data: sealed[5..<17]))
            #expect(Array(again) == sealed, "\(cell.title)")
            // Another row, column or table, another life of the same key, or a
            // changed bound field: no opening.
            let moved = [
                try keys.context(
                    table: cell.table, column: cell.column, primaryKey: .integer(999_999), life: life,
                    bound: cell.bound.map { ($0.name, $0.value.store) }),
                try keys.context(
                    table: cell.table, column: cell.column + "x", primaryKey: cell.primary_key.store, life: life,
                    bound: cell.bound.map { ($0.name, $0.value.store) }),
                try keys.context(
                    table: cell.table + "x", column: cell.column, primaryKey: cell.primary_key.store, life: life,
                    bound: cell.bound.map { ($0.name, $0.value.store) }),
                try keys.context(
                    table: cell.table, column: cell.column, primaryKey: cell.primary_key.store,
                    life: life.map { $0 ^ 1 }, bound: cell.bound.map { ($0.name, $0.value.store) }),
                try keys.context(
                    table: cell.table, column: cell.column, primaryKey: cell.primary_key.store, life: life,
                    bound: cell.bound.map { ($0.name, StoreValue.text("someone else")) } + [("extra", .null)]),
            ]
            for context in moved {
                #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
                    try keys.openCell(sealed, context: context, table: cell.table, column: cell.column)
                }
            }
        }
    }

    @Test func indexVectorsMatch() throws {
        let (vectors, keys) = try Self.load()
        #expect(vectors.indexes.count == 8)
        for vector in vectors.indexes {
            let transforms = try vector.transforms.map(IndexTransform.init(parsing:))
            let texts = StoreKeys.indexInput(vector.values.map(\.store), transforms: transforms)
            #expect(texts == vector.texts, "\(vector.title)")
            guard let texts, let expected = vector.index_hex else { continue }
            let value = try keys.indexValue(
                texts, table: vector.table, index: vector.index, bits: vector.bits, version: vector.version)
            #expect(value == Self.bytes(expected), "\(vector.title)")
        }
    }

    /// Token indexes: the same tokens and the same distinct entries as Python.
    @Test func tokenVectorsMatch() throws {
        let (vectors, keys) = try Self.load()
        #expect(vectors.tokens.count == 4)
        for vector in vectors.tokens {
            let tokens = try IndexTokens(parsing: vector.tokens)
            let transforms = try vector.transforms.map(IndexTransform.init(parsing:))
            #expect(tokens.tokens(of: vector.value, transforms: transforms) == vector.tokens_out, "\(vector.title)")
            let entries = try keys.tokenEntries(
                .text(vector.value), tokens: tokens, transforms: transforms, table: vector.table, index: vector.index,
                bits: vector.bits, version: vector.version)
            #expect(entries == vector.entries_hex.map(Self.bytes), "\(vector.title)")
        }
    }

    @Test func valuesRoundTripAndGarbageIsRefused() throws {
        for value in [
            StoreValue.text(""), .text("ünï"), .integer(.min), .integer(0), .bytes([]), .bytes([0, 255]), .null,
            .double(-0.1), .double(.greatestFiniteMagnitude), .date(milliseconds: .min),
        ] {
            #expect(try StoreValue(encoded: value.encoded) == value)
        }
        for garbage: [UInt8] in [
            [], [0x78], [0x69, 1, 2], [0x6E, 0], [0x74, 0xFF, 0xFE], [0x66, 0, 0],
            [0x64] + [UInt8](repeating: 0, count: 9),
            [0x66, 0x7F, 0xF0, 0, 0, 0, 0, 0, 0],  // infinity
        ] {
            #expect(throws: CofferError(.malformed, "")) { try StoreValue(encoded: garbage) }
        }
        #expect(!"\(StoreValue.text("secret words"))".contains("secret"))
        let (_, keys) = try Self.load()
        let context = try keys.context(
            table: "t", column: "c", primaryKey: .integer(1), life: Array(repeating: 1, count: 16), bound: [])
        #expect(throws: CofferError(.malformed, "")) {
            try keys.context(table: "t", column: "c", primaryKey: .integer(1), life: [1], bound: [])
        }
        for garbage: [UInt8] in [[], [1], Array(repeating: 7, count: 40)] {
            #expect(throws: CofferError.self) { try keys.openCell(garbage, context: context, table: "t", column: "c") }
        }
    }
}
