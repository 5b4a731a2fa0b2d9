import Coffer
import CofferStore
import Foundation
import Testing

/// Listing, ordering, limits and counts, the same on SQLite and PostgreSQL
/// (over verified TLS): what the seed's list screen needs.
@Suite struct StoreQueryTests {
    enum Backend: String, CaseIterable, Sendable { case sqlite, postgres }

    /// A new store on `backend` (in `folder` for SQLite).
    static func store(_ schema: StoreSchema, on backend: Backend, in folder: RecordStoreTests.Folder, name: String)
        throws -> RecordStore
    {
        switch backend {
        case .sqlite:
            try RecordStore.create(
                sqlite: folder.database, schema: schema, secret: RecordStoreTests.passphrase,
                kdf: RecordStoreTests.fast, rollbackGuard: nil)
        case .postgres:
            #if Server
            try PostgresStoreTests.store(schema, in: name + "_" + String(UUID().uuidString.prefix(8)).lowercased())
            #else
            throw CofferError(.unsupported, "PostgreSQL stores come with the Server trait")
            #endif
        }
    }

    static func enabled(_ backend: Backend) -> Bool {
        #if Server
        backend == .sqlite || PostgresStoreTests.available
        #else
        backend == .sqlite
        #endif
    }

    static let names: [StoreValue] = ["Zoë", "abe", "Émile", "Zoe", .null, "", "zed", "Abe"]

    @Test(arguments: Backend.allCases) func listsOrdersPagesAndCounts(_ backend: Backend) throws {
        guard Self.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let store = try Self.store(try RecordStoreTests.schema(bits: 1), on: backend, in: folder, name: "listing")
        for (index, name) in Self.names.enumerated() {
            try store.put(
                ["to": name, "description": .text("gift \(index)"), "email": "e\(index % 3)"], into: "presents")
        }
        let all = try store.fetchAll(StoreQuery("presents"))
        #expect(all.map { $0["id"] } == (1...8).map { StoreValue.integer($0) })
        #expect(all.map { $0["description"] } == (0..<8).map { StoreValue.text("gift \($0)") })
        // By UTF-8 bytes, null first; ties in primary key order.
        let expected = Self.names.enumerated().sorted { a, b in
            let (x, y) = (a.element.textValue?.utf8, b.element.textValue?.utf8)
            switch (x, y) {
            case (nil, nil): return a.offset < b.offset
            case (nil, _): return true
            case (_, nil): return false
            case (let x?, let y?): return x.elementsEqual(y) ? a.offset < b.offset : x.lexicographicallyPrecedes(y)
            }
        }.map(\.element)
        let ascending = try store.fetchAll(StoreQuery("presents").order(by: "to"))
        #expect(ascending.map { $0["to"] ?? .null } == expected)
        let descending = try store.fetchAll(StoreQuery("presents").order(by: "to", descending: true))
        #expect(descending.map { $0["to"] ?? .null } == expected.reversed())
        var paged: [StoreValue] = []
        for page in 0..<3 {
            paged += try store.fetchAll(StoreQuery("presents").order(by: "to").limit(3, offset: page * 3)).map {
                $0["to"] ?? .null
            }
        }
        #expect(paged == expected)
        #expect(try store.fetchAll(StoreQuery("presents").order(by: "to").limit(100, offset: 7)).count == 1)
        #expect(try store.fetchAll(StoreQuery("presents").limit(0)).isEmpty)
        #expect(try store.fetchCount(StoreQuery("presents")) == 8)
        #expect(try store.fetchCount(StoreQuery("presents").filter("to", equals: "abe")) == 1)
        #expect(try store.fetchCount(StoreQuery("presents").filter("to", equals: .null)) == 1)
        #expect(try store.fetchCount(StoreQuery("presents").limit(5, offset: 1)) == 5)
        #expect(try store.fetchOne(StoreQuery("presents").order(by: "to", descending: true))?["to"] == "Émile")
        #expect(try store.find("presents", where: [:]).count == 8)
    }

    /// With a sealed condition through a 1-bit index (half the rows
    /// collide), the limit, the offset and the count apply to the records
    /// that really match, in order.
    @Test(arguments: Backend.allCases) func sealedConditionsLimitAndCountExactly(_ backend: Backend) throws {
        guard Self.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let store = try Self.store(try RecordStoreTests.schema(bits: 1), on: backend, in: folder, name: "sealedquery")
        for index in 0..<40 {
            try store.put(
                ["to": .text("t\(39 - index)"), "description": "d", "email": .text("user\(index % 4)@example.org")],
                into: "presents")
        }
        let query = StoreQuery("presents").filter("email", equals: " USER2@example.org").order(by: "to")
        let matching = try store.fetchAll(query)
        #expect(matching.count == 10)
        #expect(matching.allSatisfy { $0["email"] == "user2@example.org" })
        let names = matching.map { $0["to"]!.textValue! }
        #expect(names == names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        #expect(try store.fetchCount(query) == 10)
        #expect(try store.fetchAll(query.limit(4, offset: 8)).map { $0["to"] } == matching.suffix(2).map { $0["to"] })
        #expect(try store.fetchCount(query.limit(4, offset: 8)) == 2)
        #expect(
            try store.fetchCount(query.filter("to", equals: .text(names[3]))) == 1,
            "a clear condition beside the sealed one")
    }

    @Test func refusesWhatItCannotDo() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try Self.store(try RecordStoreTests.schema(), on: .sqlite, in: folder, name: "refusals")
        func refused(_ query: StoreQuery, _ words: String) {
            #expect {
                try store.fetchAll(query)
            } throws: {
                ($0 as? CofferError)?.code == .invalidArgument && "\($0)".contains(words)
            }
        }
        refused(StoreQuery("presents").order(by: "description"), "cannot order what it cannot read")
        refused(StoreQuery("presents").order(by: "nope"), "no field nope")
        refused(StoreQuery("presents").filter("nope", equals: 1), "no field nope")
        refused(StoreQuery("presents").limit(-1), "not negative")
        refused(StoreQuery("presents").limit(1, offset: -3), "not negative")
        refused(StoreQuery("nothing"), "no table")
        refused(StoreQuery("presents").filter("description", equals: "x"), "no blind index")
    }

    @Test func literalsAndAccessors() throws {
        let record: StoreRecord = ["to": "Grandma", "year": 2026, "raw": .bytes([1]), "gone": .null]
        #expect(record["to"]?.textValue == "Grandma" && record["to"]?.integerValue == nil)
        #expect(record["year"]?.integerValue == 2026 && record["year"]?.textValue == nil)
        #expect(record["raw"]?.bytesValue == [1] && record["gone"]?.isNull == true && record["to"]?.isNull == false)
        #expect(try StoreValue(encoding: Date(timeIntervalSince1970: 1.5)) == .date(milliseconds: 1500))
        #expect(try StoreValue(encoding: true) == .integer(1))
        #expect(try StoreValue(encoding: 0.1) == .double(0.1) && StoreValue.double(0.1).doubleValue == 0.1)
        #expect(try StoreValue(encoding: Float(0.5)) == 0.5)
        #expect(throws: CofferError.self) { try StoreValue(encoding: Double.nan) }
        #expect(throws: CofferError.self) { try StoreValue(encoding: Double.infinity) }
        // Each type's encoding, and back (docs/store.md's table of tags).
        for value: StoreValue in [
            "x", 7, -2.5, .date(milliseconds: -1), .bytes([0]), .null, .double(-0.0), .integer(.min),
        ] {
            #expect(try StoreValue(encoded: value.encoded) == value && value.encoded.first == value.encoded.first)
        }
        #expect(StoreValue.double(1).encoded == [0x66, 0x3F, 0xF0, 0, 0, 0, 0, 0, 0])
        #expect(StoreValue.date(milliseconds: 1).encoded == [0x64, 0, 0, 0, 0, 0, 0, 0, 1])
        #expect(throws: CofferError.self) { try StoreValue(encoded: [0x66, 0x7F, 0xF8, 0, 0, 0, 0, 0, 0]) }  // NaN
        #expect(try StoreValue(encoding: Data([9])) == .bytes([9]))
        #expect(try StoreValue(encoding: Optional<String>.none) == .null)
        #expect(throws: CofferError.self) { try StoreValue(encoding: UInt64.max) }
        #expect(throws: CofferError.self) { try StoreValue(encoding: [1, 2]) }
    }
}
