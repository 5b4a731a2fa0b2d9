import Coffer
import CofferStore
import Foundation
import Testing

/// Typed records: a `Codable` struct kept in a table, its sealed fields
/// sealed by the schema, read back as the same values.
@Suite struct SealedRecordTests {
    enum Wrapping: String, Codable { case paper, cloth }

    struct Present: SealedRecord, Equatable {
        static let storeTable = "presents"
        var id: Int64?
        var toWhom: String
        var description: String
        var due: Date
        var price: Double
        var bought: Bool
        var wrapping: Wrapping
        var photo: Data?
        var note: String?
    }

    static func schema() throws -> StoreSchema {
        try StoreSchema(tables: [
            .init(
                name: "presents", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer), .init(name: "toWhom", type: .text),
                    .init(name: "description", type: .text, sealed: true, bind: ["toWhom"]),
                    .init(name: "due", type: .date), .init(name: "price", type: .double, sealed: true),
                    .init(name: "bought", type: .integer), .init(name: "wrapping", type: .text),
                    .init(name: "photo", type: .bytes, sealed: true), .init(name: "note", type: .text, sealed: true),
                    .init(name: "shop", type: .text),
                ]),
            .init(name: "other", primaryKey: "id", fields: [.init(name: "id", type: .integer)]),
        ])
    }

    static func present(_ toWhom: String, _ description: String, day: Double = 0) -> Present {
        Present(
            id: nil, toWhom: toWhom, description: description,
            due: Date(timeIntervalSince1970: 1_766_620_800 + day * 86_400 + 0.25), price: 12.5, bought: false,
            wrapping: .paper, photo: nil, note: nil)
    }

    @Test func putFetchUpdateDeleteAsTypes() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try Self.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast, rollbackGuard: nil)
        var scarf = try store.put(Self.present("Grandma", "a knitted scarf"))
        #expect(scarf.id == 1)
        let more = try store.put(contentsOf: [Self.present("Sam", "a kite", day: 2), Self.present("Grandma", "tea")])
        #expect(more.map(\.id) == [2, 3])
        #expect(try store.get(Present.self, id: 1) == scarf)
        #expect(try store.get(Present.self, id: 9) == nil)

        let grandma = try store.fetchAll(Present.self, Present.query.filter("toWhom", equals: "Grandma"))
        #expect(grandma.map(\.description) == ["a knitted scarf", "tea"])
        let byDue = try store.fetchAll(Present.self, Present.query.order(by: "due", descending: true))
        #expect(byDue.first?.description == "a kite")
        #expect(try store.fetchCount(Present.self) == 3)
        #expect(try store.fetchOne(Present.self, Present.query.order(by: "toWhom"))?.toWhom == "Grandma")

        // The dictionary API sees the same fields; the description is sealed on disk.
        let raw = try #require(try store.get("presents", id: 1))
        #expect(raw["due"] == .date(milliseconds: 1_766_620_800_250) && raw["price"] == 12.5 && raw["bought"] == 0)
        #expect(raw["wrapping"] == "paper" && raw["photo"] == .null)
        #expect(!(try Data(contentsOf: URL(fileURLWithPath: folder.database))).contains(Data("knitted".utf8)))

        // Update writes the type's fields (nil → null) and keeps the table's others.
        try store.update("presents", id: 1, set: ["shop": "the market", "note": "old"])
        scarf.photo = Data([1, 2, 3])
        scarf.bought = true
        scarf.price = 0.1
        scarf.wrapping = .cloth
        #expect(try store.update(scarf))
        let updated = try #require(try store.get("presents", id: 1))
        #expect(updated["shop"] == "the market" && updated["note"] == .null && updated["photo"] == .bytes([1, 2, 3]))
        #expect(try store.get(Present.self, id: 1) == scarf)
        var ghost = scarf
        ghost.id = 77
        #expect(try !store.update(ghost))
        #expect(try store.delete(Present.self, id: 2))
        #expect(try store.fetchCount(Present.self) == 2)
    }

    @Test func mismatchesAreClearErrors() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try Self.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast, rollbackGuard: nil)
        try store.put(
            [
                "toWhom": "Sam", "description": "x", "due": .date(milliseconds: 5), "price": 1.5, "bought": 1,
                "wrapping": "box",
            ],
            into: "presents")
        func refused(_ words: String, _ body: () throws -> Void) {
            #expect {
                try body()
            } throws: {
                ($0 as? CofferError)?.code == .invalidArgument && "\($0)".contains(words)
            }
        }
        // A value of another type never goes in, sealed or clear.
        refused("presents.price holds double, not text") { try store.update("presents", id: 1, set: ["price": "1"]) }
        refused("presents.due holds date, not integer") { try store.update("presents", id: 1, set: ["due": 5]) }
        try store.update("presents", id: 1, set: ["bought": 2])
        refused("bought") { _ = try store.get(Present.self, id: 1) }
        try store.update("presents", id: 1, set: ["bought": 1])
        refused("presents.wrapping holds a value Wrapping does not take") { _ = try store.get(Present.self, id: 1) }
        try store.update("presents", id: 1, set: ["wrapping": .null])
        refused("wrapping is null") { _ = try store.get(Present.self, id: 1) }
        refused("asks for other") { _ = try store.fetchAll(Present.self, StoreQuery("other")) }

        struct Nested: SealedRecord {
            struct Inner: Codable { var a = 1 }
            static let storeTable = "presents"
            var toWhom = Inner()
        }
        refused("structure") { try store.put(Nested()) }
        struct Listed: SealedRecord {
            static let storeTable = "presents"
            var toWhom = ["a"]
        }
        refused("list") { try store.put(Listed()) }
    }

    @Test func asyncOpenAndTypedCalls() async throws {
        let folder = try RecordStoreTests.Folder()
        let created = try await RecordStore.create(
            sqlite: folder.database, schema: try Self.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast, rollbackGuard: nil)
        try await created.put(Self.present("Grandma", "a scarf"))
        let store = try await RecordStore.open(
            sqlite: folder.database, secret: RecordStoreTests.passphrase, rollbackGuard: nil)
        #expect(try await store.fetchAll(Present.self).map(\.description) == ["a scarf"])
        #expect(try await store.fetchCount(Present.self, Present.query.filter("toWhom", equals: "Sam")) == 0)
        await #expect(throws: CofferError.self) {
            _ = try await RecordStore.open(
                sqlite: folder.database, secret: .password(Array("wrong".utf8)), rollbackGuard: nil)
        }
    }
}

/// Printing: clear fields and the primary key show their values, sealed
/// fields only their kind and length, whatever the values are.
@Suite struct RecordDescriptionTests {
    @Test func clearFieldsPrintAndSealedOnesStayRedacted() throws {
        let schema = try SealedRecordTests.schema()
        let record: StoreRecord = [
            "id": 7, "toWhom": "Grandma \"G\"", "description": "a knitted scarf", "bought": 1,
            "photo": .bytes([1, 2]), "shop": .bytes([0xAB]), "note": .null, "extra": "who knows",
        ]
        let text = schema.description(of: record, in: "presents")
        #expect(
            text == """
                ["bought": 1, "description": StoreValue.text(<15 bytes>), "extra": StoreValue.text(<9 bytes>), \
                "id": 7, "note": StoreValue.null, "photo": StoreValue.bytes(<2 bytes>), "shop": 0xab, \
                "toWhom": "Grandma \\"G\\""]
                """)
        for secret in ["a knitted scarf", "who knows", "0102"] { #expect(!text.contains(secret)) }
        // A table the schema does not have: nothing is known clear.
        #expect(!schema.description(of: record, in: "nope").contains("Grandma"))

        var present = SealedRecordTests.present("Sam", "a kite")
        present.id = 3
        let typed = schema.description(of: present)
        #expect(typed.hasPrefix("Present[") && typed.contains("\"toWhom\": \"Sam\"") && typed.contains("\"id\": 3"))
        #expect(!typed.contains("kite") && !typed.contains("12.5"))
    }
}
