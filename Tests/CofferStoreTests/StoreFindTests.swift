import Coffer
import CofferStore
import Foundation
import GRDB
import Testing

/// Finds on several fields: a compound index over two sealed fields, clear
/// conditions in SQL, and answers equal to a scan of the plaintext.
@Suite struct StoreFindTests {
    static func schema() throws -> StoreSchema {
        try StoreSchema(tables: [
            .init(
                name: "patients", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer),
                    .init(name: "clinic", type: .text),
                    .init(
                        name: "status", type: .text, sealed: true,
                        indexes: [.init(name: "status_last4", transforms: [.trim], bits: 3, with: ["last4"])]),
                    .init(name: "last4", type: .text, sealed: true, indexes: [.init(name: "last4_exact", bits: 2)]),
                ])
        ])
    }

    @Test func compoundAndClearConditionsAreExact() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try Self.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast)
        var plain: [(id: StoreValue, clinic: String, status: String, last4: String)] = []
        for index in 0..<150 {
            let row = (
                clinic: "c\(index % 3)", status: index % 2 == 0 ? "positive" : "negative", last4: "\(1000 + index % 20)"
            )
            let id = try store.put(
                ["clinic": .text(row.clinic), "status": .text(" " + row.status), "last4": .text(row.last4)],
                into: "patients")
            plain.append((id, row.clinic, row.status, row.last4))
        }
        for status in ["positive", "negative"] {
            for last4 in ["1000", "1003", "1019", "9999"] {
                let both = try store.find("patients", where: ["status": .text(status + "  "), "last4": .text(last4)])
                #expect(
                    Set(both.compactMap { $0["id"] })
                        == Set(plain.filter { $0.status == status && $0.last4 == last4 }.map(\.id)),
                    "\(status) \(last4)")
                let three = try store.find(
                    "patients", where: ["status": .text(status), "last4": .text(last4), "clinic": .text("c1")])
                #expect(
                    Set(three.compactMap { $0["id"] })
                        == Set(plain.filter { $0.status == status && $0.last4 == last4 && $0.clinic == "c1" }.map(\.id))
                )
            }
        }
        // last4 alone has its own index; status alone has none.
        #expect(
            try store.find("patients", where: ["last4": .text("1007")]).count
                == plain.filter { $0.last4 == "1007" }.count)
        #expect(throws: CofferError(.invalidArgument, "")) {
            try store.find("patients", where: ["status": .text("positive")])
        }
        #expect(try store.find("patients", where: [:]).count == plain.count, "no conditions: every record")
        #expect(throws: CofferError(.invalidArgument, "")) { try store.find("patients", where: ["age": .integer(3)]) }
        #expect(try store.find("patients", where: ["clinic": .text("c2")]).count == 50)
    }
}

/// Token indexes: a record found by any one of its words or tags, exactly,
/// through updates, deletes, a reindex, a migration and verify.
@Suite struct StoreTokenTests {
    static func schema() throws -> StoreSchema {
        try StoreSchema(tables: [
            .init(
                name: "notes", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer),
                    .init(
                        name: "body", type: .text, sealed: true,
                        indexes: [.init(name: "body_words", transforms: [.nfkc, .lowercase], bits: 4, tokens: .words)]),
                    .init(
                        name: "tags", type: .text, sealed: true,
                        indexes: [.init(name: "tag_set", transforms: [.trim], bits: 3, tokens: .split(","))]),
                    .init(name: "owner", type: .text),
                ])
        ])
    }

    static func words(_ text: String) -> Set<String> {
        Set(text.lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init))
    }

    @Test func tokensFindExactlyThroughEveryChange() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try Self.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast)
        let vocabulary = ["Smith", "Jones", "smith-jones", "Ｔｅａ", "kite", "scarf", "tea", "lamp", "book", "pen"]
        var plain: [StoreValue: (body: String, tags: String)] = [:]
        for index in 0..<120 {
            let body = (0..<3).map { vocabulary[(index * 7 + $0 * 3) % vocabulary.count] }.joined(separator: " ")
            let tags = " t\(index % 4), t\(index % 6) ,t\(index % 5)"
            let id = try store.put(["body": .text(body), "tags": .text(tags), "owner": .text("o")], into: "notes")
            plain[id] = (body, tags)
        }
        func check(_ moment: String) throws {
            for word in ["smith", "JONES", "tea", "kite", "absent"] {
                let found = Set(try store.find("notes", where: "body", hasToken: word).compactMap { $0["id"] })
                let expected = Set(
                    plain.filter {
                        Self.words($0.value.body.precomposedStringWithCompatibilityMapping).contains(word.lowercased())
                    }.keys)
                #expect(found == expected, "\(moment): \(word)")
            }
            for tag in ["t1", " t3 ", "t5"] {
                let found = Set(try store.find("notes", where: "tags", hasToken: tag).compactMap { $0["id"] })
                let wanted = tag.trimmingCharacters(in: .whitespaces)
                let expected = Set(
                    plain.filter {
                        $0.value.tags.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.contains(
                            wanted)
                    }.keys)
                #expect(found == expected, "\(moment): tag \(tag)")
            }
            let verified = try store.verify()
            #expect(verified.isIntact, "\(moment): \(verified.problems)")
        }
        try check("after puts")
        try store.update("notes", id: .integer(3), set: ["body": .text("only kite now")])
        plain[.integer(3)]!.body = "only kite now"
        try store.delete("notes", id: .integer(4))
        plain[.integer(4)] = nil
        try check("after update and delete")
        try store.reindex(batchSize: 50)
        try check("after reindex")
        let queue = try DatabaseQueue(path: folder.database)
        let words = StoreSQL.tokenTableName("notes", "body_words")
        let tags = StoreSQL.tokenTableName("notes", "tag_set")
        let (versions, orphans) = try queue.read { db in
            (
                try Set(
                    Data.fetchAll(db, sql: "SELECT entry FROM \(words)").map {
                        Int($0[0]) << 8 | Int($0[1])
                    }),
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM \(tags) WHERE key NOT IN (SELECT id FROM notes)")!
            )
        }
        #expect(versions == [2] && orphans == 0)
        // A removed entry is found by verify.
        try queue.write { db in
            try db.execute(
                sql:
                    "DELETE FROM \(tags) WHERE (entry, key) = (SELECT entry, key FROM \(tags) LIMIT 1)"
            )
        }
        #expect(try store.verify().problemCount == 1)
        // Batches of a few rows read each batch's entries by key range: the same answer.
        #expect(try store.verify(batchSize: 3).problemCount == 1)
        #expect(throws: CofferError(.invalidArgument, "")) {
            try store.find("notes", where: "body", hasToken: "two words")
        }
        #expect(throws: CofferError(.invalidArgument, "")) { try store.find("notes", where: "owner", hasToken: "o") }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try store.find("notes", where: "body", equals: .text("tea"))
        }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try StoreSchema(tables: [
                .init(
                    name: "t", primaryKey: "id",
                    fields: [
                        .init(name: "id", type: .integer), .init(name: "a", type: .text),
                        .init(
                            name: "b", type: .text, sealed: true,
                            indexes: [.init(name: "i", bits: 8, with: ["a"], tokens: .words)]),
                    ])
            ])
        }
    }

    /// A clear column migrated with a token index is found by its words half way and after.
    @Test func migrationBuildsTokenEntries() throws {
        let folder = try RecordStoreTests.Folder()
        let schema = try StoreSchema(tables: [
            .init(
                name: "notes", primaryKey: "id",
                fields: [.init(name: "id", type: .integer), .init(name: "body", type: .text)])
        ])
        let store = try RecordStore.create(
            sqlite: folder.database, schema: schema, secret: RecordStoreTests.passphrase, kdf: RecordStoreTests.fast)
        try store.put(contentsOf: (0..<30).map { ["body": .text("word\($0 % 5) common")] }, into: "notes")
        let index = StoreSchema.Index(name: "body_words", bits: 2, tokens: .words)
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try store.migrate("notes", field: "body", indexes: [index], batchSize: 10) { _ in throw Stop() }
        }
        #expect(try store.find("notes", where: "body", hasToken: "common").count == 10)
        let report = try store.migrate("notes", field: "body", indexes: [index], batchSize: 10)
        #expect(report.resumed)
        #expect(try store.find("notes", where: "body", hasToken: "common").count == 30)
        #expect(try store.find("notes", where: "body", hasToken: "word2").count == 6)
        #expect(try store.verify().isIntact)
    }
}
