import Coffer
import CofferStore
import Foundation
import Testing

/// Queries beyond equality on clear fields (ranges, in, prefixes, parts,
/// null tests, and, or, not), typed token search on a sealed field, and
/// the refusals, the same on SQLite and PostgreSQL; each result checked
/// against the same condition evaluated here in Swift over the records.
@Suite struct StorePredicateTests {
    typealias Backend = StoreQueryTests.Backend

    static let schema: StoreSchema = {
        try! StoreSchema(tables: [
            .init(
                name: "notes", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer),
                    .init(name: "title", type: .text),
                    .init(name: "createdAt", type: .date),
                    .init(name: "score", type: .double),
                    .init(name: "raw", type: .bytes),
                    .init(
                        name: "body", type: .text, sealed: true,
                        indexes: [.init(name: "body_words", transforms: [.nfkc, .lowercase], bits: 4, tokens: .words)]),
                    .init(
                        name: "tag", type: .text, sealed: true,
                        indexes: [.init(name: "tag_exact", transforms: [.trim, .lowercase], bits: 2)]),
                ])
        ])
    }()

    static let titles: [StoreValue] = [
        "shopping list", "Shop", "SHOPPING", "50% off", "a_b", "back\\slash", "naïve café", "", .null, "Zoë",
        "shop_%", "ZZZ",
    ]

    /// The notes: titles with LIKE's special characters, dates 1 to 12 days
    /// in, bodies with "milk" in every third, tags "work" and "home".
    static func filled(_ backend: Backend, _ folder: RecordStoreTests.Folder) throws -> (RecordStore, [StoreRecord]) {
        let store = try StoreQueryTests.store(schema, on: backend, in: folder, name: "predicates")
        var records: [StoreRecord] = []
        for (index, title) in titles.enumerated() {
            let record: StoreRecord = [
                "title": title, "createdAt": .date(milliseconds: Int64(index + 1) * 86_400_000),
                // 10.5 after 9.75, -0.5 before 0.25: ordered as numbers, not as text.
                "score": index == 5 ? .null : .double(Double(index) * 1.25 - 3.5),
                "raw": index % 4 == 0 ? .null : .bytes([UInt8(index), 0xff]),
                "body": .text(index % 3 == 0 ? "buy Milk and eggs" : "call home"),
                "tag": index % 2 == 0 ? " Work" : "home",
            ]
            let id = try store.put(record, into: "notes")
            var stored = record
            stored["id"] = id
            records.append(stored)
        }
        return (store, records)
    }

    static func ids(_ records: [StoreRecord]) -> [Int64] { records.compactMap { $0["id"]?.integerValue } }

    static func milliseconds(_ record: StoreRecord) -> Int64 {
        Int64((record["createdAt"]!.dateValue!.timeIntervalSince1970 * 1000).rounded())
    }

    static func score(_ record: StoreRecord) -> Double? { record["score"]?.doubleValue }

    /// Null first, then text by UTF-8 bytes, as the databases order it here.
    static func less(_ a: StoreValue, _ b: StoreValue) -> Bool? {
        if let x = a.integerValue, let y = b.integerValue { return x < y }
        if let x = a.doubleValue, let y = b.doubleValue { return x < y }
        if let x = a.textValue, let y = b.textValue { return x.utf8.lexicographicallyPrecedes(y.utf8) }
        if let x = a.bytesValue, let y = b.bytesValue { return x.lexicographicallyPrecedes(y) }
        return nil
    }

    static func fold(_ text: String) -> String {
        String(decoding: text.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }

    @Test(arguments: Backend.allCases) func rangesInPrefixesPartsAndNullsMatchWhatSwiftFinds(_ backend: Backend)
        throws
    {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let (store, records) = try Self.filled(backend, folder)
        let day: Int64 = 86_400_000
        let cases: [(StorePredicate, (StoreRecord) -> Bool)] = [
            (StoreColumn("createdAt") > .date(milliseconds: 5 * day), { Self.milliseconds($0) > 5 * day }),
            (StoreColumn("createdAt") >= .date(milliseconds: 5 * day), { Self.milliseconds($0) >= 5 * day }),
            (StoreColumn("createdAt") < .date(milliseconds: 3 * day), { Self.milliseconds($0) < 3 * day }),
            (StoreColumn("createdAt") <= .date(milliseconds: 3 * day), { Self.milliseconds($0) <= 3 * day }),
            (
                StoreColumn("createdAt").between(.date(milliseconds: 4 * day), and: .date(milliseconds: 7 * day)),
                { (4 * day...7 * day).contains(Self.milliseconds($0)) }
            ),
            (StoreColumn("score") > 2.5, { (Self.score($0) ?? -.infinity) > 2.5 }),
            (StoreColumn("score") <= -0.5, { (Self.score($0) ?? .infinity) <= -0.5 }),
            (StoreColumn("score").between(-1, and: 9.75), { (-1...9.75).contains(Self.score($0) ?? .nan) }),
            (StoreColumn("score").in([0.25, 10.5]), { [0.25, 10.5].contains(Self.score($0)) }),
            (StoreColumn("score").isNull, { $0["score"] == .null }),
            (StoreColumn("title") == "Shop", { $0["title"] == "Shop" }),
            (StoreColumn("title") != "Shop", { $0["title"] != "Shop" && $0["title"] != .null }),
            (StoreColumn("title") < "Zoë", { Self.less($0["title"]!, "Zoë") == true }),
            (StoreColumn("title") >= "a", { Self.less($0["title"]!, "a") == false }),
            (StoreColumn("id").in([2, 4, 99]), { [2, 4].contains($0["id"]!.integerValue!) }),
            (StoreColumn("title").in(["Shop", "ZZZ", ""]), { ["Shop", "ZZZ", ""].contains($0["title"]!) }),
            (StoreColumn("id").in([]), { _ in false }),
            (StoreColumn("title").hasPrefix("Shop"), { $0["title"]!.textValue?.hasPrefix("Shop") == true }),
            (
                StoreColumn("title").hasPrefix("shop", ignoringCase: true),
                { Self.fold($0["title"]!.textValue ?? "-").hasPrefix("shop") }
            ),
            (StoreColumn("title").contains("%"), { $0["title"]!.textValue?.contains("%") == true }),
            (StoreColumn("title").contains("_"), { $0["title"]!.textValue?.contains("_") == true }),
            (StoreColumn("title").contains("\\"), { $0["title"]!.textValue?.contains("\\") == true }),
            (StoreColumn("title").contains("é"), { $0["title"]!.textValue?.contains("é") == true }),
            (StoreColumn("title").contains("É", ignoringCase: true), { _ in false }),  // ASCII letters only
            (StoreColumn("title").hasPrefix(""), { $0["title"]!.textValue != nil }),
            (StoreColumn("title").isNull, { $0["title"] == .null }),
            (StoreColumn("raw").isNotNull, { $0["raw"] != .null }),
            (StoreColumn("raw") > .bytes([5]), { Self.less(.bytes([5]), $0["raw"]!) == true }),
            (
                StoreColumn("title").contains("op") && StoreColumn("createdAt") > .date(milliseconds: day),
                { $0["title"]!.textValue?.contains("op") == true && Self.milliseconds($0) > day }
            ),
            (
                StoreColumn("title").isNull || StoreColumn("id").in([1]),
                { $0["title"] == .null || $0["id"] == 1 }
            ),
            (!StoreColumn("title").hasPrefix("S"), { $0["title"]!.textValue.map { !$0.hasPrefix("S") } ?? false }),
        ]
        for (index, (predicate, expected)) in cases.enumerated() {
            let query = StoreQuery("notes").filter(predicate)
            let found = try store.fetchAll(query)
            #expect(Self.ids(found) == Self.ids(records.filter(expected)), "case \(index) on \(backend)")
            #expect(try store.fetchCount(query) == found.count, "case \(index) on \(backend)")
        }
        // Ties follow insertion (the store-assigned keys), either direction.
        let same = StoreValue.date(milliseconds: 42)
        var tied: [Int64] = []
        for title in ["t1", "t2", "t3"] {
            tied.append(try store.put(["title": .text(title), "createdAt": same], into: "notes").integerValue!)
        }
        for descending in [false, true] {
            let query = StoreQuery("notes").filter(StoreColumn("createdAt") == same).order(
                by: "createdAt", descending: descending)
            #expect(Self.ids(try store.fetchAll(query)) == tied, "\(backend)")
        }
        // Doubles ordered as numbers (10.5 after 9.75; text would put it first).
        let byScore = try store.fetchAll(StoreQuery("notes").filter(StoreColumn("score").isNotNull).order(by: "score"))
        #expect(byScore.map { Self.score($0)! } == records.compactMap(Self.score).sorted(), "\(backend)")
        // With a sealed equality: the blind index picks candidates, the predicate narrows them in SQL.
        let work = try store.fetchAll(
            StoreQuery("notes").filter("tag", equals: "work").filter(
                StoreColumn("createdAt") > .date(milliseconds: 6 * day)
            )
            .order(by: "createdAt", descending: true).limit(2))
        let expected = records.filter { $0["tag"] == " Work" && Self.milliseconds($0) > 6 * day }
        #expect(Self.ids(work) == Array(Self.ids(expected).reversed().prefix(2)))
    }

    /// Typed token search: order, limit, offset and count over the records
    /// that really hold the token (4-bit entries collide: the opened
    /// records are checked).
    @Test(arguments: Backend.allCases) func tokensOfASealedFieldWithOrderAndLimit(_ backend: Backend) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let (store, records) = try Self.filled(backend, folder)
        let milk = Self.ids(records.filter { $0["body"]!.textValue!.contains("Milk") })
        #expect(milk.count == 4)
        let query = StoreQuery("notes").filter("body", hasToken: "MILK").order(by: "createdAt", descending: true)
        #expect(Self.ids(try store.fetchAll(query)) == milk.reversed())
        #expect(Self.ids(try store.fetchAll(query.limit(2, offset: 1))) == Array(milk.reversed()[1...2]))
        #expect(try store.fetchCount(query) == 4)
        let both = query.filter(StoreColumn("title").isNotNull).filter("tag", equals: "WORK")
        let expected = records.filter {
            $0["body"]!.textValue!.contains("Milk") && $0["title"] != .null && $0["tag"] == " Work"
        }
        #expect(Self.ids(try store.fetchAll(both)) == Self.ids(expected).reversed())
        #expect(try store.fetchAll(StoreQuery("notes").filter("body", hasToken: "butter")).isEmpty)
    }

    @Test(arguments: Backend.allCases) func whatTheDatabaseCannotAnswerIsRefusedSayingWhy(_ backend: Backend) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let (store, _) = try Self.filled(backend, folder)
        for (predicate, says) in [
            (StoreColumn("body").hasPrefix("buy"), "notes.body is sealed: the database cannot compare"),
            (StoreColumn("tag") > "a", "find a sealed field by equality through its blind index"),
            (StoreColumn("title") > .null, "use isNull"),
            (StoreColumn("createdAt") > "yesterday", "notes.createdAt holds dates: compare it with .date"),
            // The trial's trap: seconds as an integer never silently matched nothing.
            (StoreColumn("createdAt") > .integer(1_700_000_000), "holds dates: compare it with .date(someDate)"),
            (StoreColumn("score") > "2", "notes.score holds double, not text"),
            (StoreColumn("id") > 2.5, "notes.id holds integer, not double"),
            (StoreColumn("createdAt").hasPrefix("1"), "a prefix or a part is for text fields"),
            (StoreColumn("colour") == "red", "notes has no field colour"),
            (StoreColumn("id").in((0...10_000).map { StoreValue.integer($0) }), "at most 10000"),
            (StoreColumn("title") == "nul\u{0}", "cannot hold a NUL"),
        ] as [(StorePredicate, String)] {
            do {
                _ = try store.fetchAll(StoreQuery("notes").filter(predicate))
                Issue.record("\(says): answered")
            } catch let error as CofferError {
                #expect(error.code == .invalidArgument)
                #expect(error.description.contains(says), "\(error)")
            }
        }
        #expect(throws: CofferError.self) { try store.fetchAll(StoreQuery("notes").filter("title", hasToken: "x")) }
        #expect(throws: CofferError.self) {
            try store.fetchAll(StoreQuery("notes").filter("body", hasToken: "two words"))
        }
    }

    @Test func aDateIsItsMillisecondsAndCompares() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000.1236)
        #expect(StoreValue.date(date) == .date(milliseconds: 1_700_000_000_124))  // to the nearest
        #expect(StoreValue.date(date) != .integer(1_700_000_000_124))  // a date is not an integer
        #expect(StoreValue.date(date) == (try StoreValue(encoding: date)))
        #expect(StoreValue.date(Date(timeIntervalSince1970: -0.0006)) == .date(milliseconds: -1))
        #expect(StoreValue.date(Date(timeIntervalSince1970: 0.0004)) == .date(milliseconds: 0))
        #expect(StoreValue.date(.distantFuture).dateValue! > Date())
        // What comes back stores as itself, for every millisecond tried.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100_000 {
            let milliseconds = Int64.random(in: -62_135_596_800_000...253_402_300_799_999, using: &generator)
            let back = StoreValue.date(milliseconds: milliseconds).dateValue!
            #expect(StoreValue.date(back) == .date(milliseconds: milliseconds), "\(milliseconds)")
        }
    }
}

extension StorePredicateTests {
    /// The app's own SQL picks keys; the records come back opened, in its
    /// order; it cannot write, and must select the primary key.
    @Test(arguments: Backend.allCases) func theAppsOwnSQLChoosesTheRecords(_ backend: Backend) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let (store, records) = try Self.filled(backend, folder)
        let length = backend == .sqlite ? "length" : "char_length"
        let found = try store.fetchAll(
            "notes",
            selectingKeys:
                "SELECT id FROM notes WHERE \(length)(title) > ? OR id = ? OR id = ? ORDER BY \"createdAt\" DESC",
            arguments: [5, 1, 1])
        let expected = records.filter { ($0["title"]!.textValue?.count ?? 0) > 5 || $0["id"] == 1 }.reversed()
        #expect(Self.ids(found) == Self.ids(Array(expected)))
        #expect(found.allSatisfy { $0["body"]?.textValue != nil })  // opened
        for (sql, says) in [
            ("SELECT title FROM notes", "must select notes's primary key"),
            ("DELETE FROM notes RETURNING id", "read"),  // "readonly database", "read-only transaction"
            ("SELECT nothing FROM nowhere", "the store's database failed"),
        ] {
            do {
                _ = try store.fetchAll("notes", selectingKeys: sql)
                Issue.record("\(sql) was run")
            } catch let error as CofferError {
                #expect(error.description.contains(says), "\(error)")
            }
        }
        #expect(try store.fetchCount(StoreQuery("notes")) == records.count)  // the DELETE wrote nothing
    }
}
