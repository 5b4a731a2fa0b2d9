import Coffer
import CofferStore
import Foundation
import GRDB
import Testing

/// Rotate, reindex and migrate: batched jobs that writers and readers work
/// beside, that stop after any committed batch and resume there, and that
/// leave every row readable, findable and verified.
@Suite struct StoreJobTests {
    typealias Folder = RecordStoreTests.Folder
    struct Stop: Error {}

    static func filled(_ folder: Folder, rows: Int = 40) throws -> RecordStore {
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(bits: 3), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast)
        try store.put(
            contentsOf: (0..<rows).map {
                ["to": .text("t\($0 % 5)"), "description": .text("gift \($0)"), "email": .text("u\($0 % 7)@x.org")]
            }, into: "presents")
        return store
    }

    /// The key ids of every sealed cell, read from the file.
    static func cellKeys(_ folder: Folder) throws -> Set<UInt32> {
        let queue = try DatabaseQueue(path: folder.database)
        return try queue.read { db in
            Set(
                try Data.fetchAll(db, sql: "SELECT description FROM presents UNION ALL SELECT email FROM presents").map
                {
                    try SealedValue.keyID(of: $0)
                })
        }
    }

    static func indexVersions(_ folder: Folder) throws -> Set<Int> {
        let queue = try DatabaseQueue(path: folder.database)
        return try queue.read { db in
            Set(
                try Data.fetchAll(db, sql: "SELECT email_exact FROM presents WHERE email_exact IS NOT NULL").map {
                    Int($0[0]) << 8 | Int($0[1])
                })
        }
    }

    static func emails(_ store: RecordStore, _ email: String) throws -> Set<StoreValue> {
        Set(try store.find("presents", where: "email", equals: .text(email)).compactMap { $0["id"] })
    }

    @Test func rotationMovesEveryCellAndDisablesTheOldKey() throws {
        let folder = try Folder()
        let store = try Self.filled(folder)
        let before = try Self.cellKeys(folder)
        #expect(before.count == 1)
        // A second handle, opened before the rotation, keeps working after it.
        let other = try RecordStore.open(sqlite: folder.database, secret: RecordStoreTests.passphrase)
        var seen: [StoreProgress] = []
        #expect(throws: Stop.self) {
            try store.rotateKeys(batchSize: 16) {
                seen.append($0)
                if seen.count == 1 { throw Stop() }
            }
        }
        #expect(try store.pendingJob()?.kind == .rotate)
        // Half way: old and new cells both open; a reindex must wait.
        #expect(try Self.cellKeys(folder).count == 2)
        #expect(try Self.emails(other, "u3@x.org").count == 6)
        #expect(throws: CofferError(.refused, "")) { try store.reindex() }
        let late = try other.put(["to": .text("late"), "description": .text("written mid-rotation")], into: "presents")
        let report = try other.rotateKeys(batchSize: 16) { seen.append($0) }
        #expect(report.resumed && report.rows == 41 && report.changed == 80, "\(report)")
        #expect(seen.map(\.done) == [16, 32, 41] && seen.last?.total == 41)
        let after = try Self.cellKeys(folder)
        #expect(after.count == 1 && after.isDisjoint(with: before))
        #expect(try store.pendingJob() == nil)
        #expect(try store.get("presents", id: late)?["description"] == .text("written mid-rotation"))
        #expect(try store.verify().isIntact)
        // The old key is disabled in the ring the store now holds.
        let reopened = try RecordStore.open(sqlite: folder.database, secret: RecordStoreTests.passphrase)
        #expect(try Self.emails(reopened, "U3@x.org ").count == 6)
        #expect(try reopened.rotateKeys().changed == 82)
    }

    /// A row a writer changes after a job read it (the next batch is read
    /// ahead while one is written) keeps the writer's values: the job's
    /// write of that row finds its cells changed and leaves it.
    static func writerWinsOverAJob(_ store: RecordStore) throws {
        var changed = false
        for job in ["reindex", "rotate"] {
            let run: ((StoreProgress) throws -> Void) throws -> StoreJobReport =
                job == "reindex"
                ? { try store.reindex(batchSize: 16, progress: $0) }
                : { try store.rotateKeys(batchSize: 16, progress: $0) }
            _ = try run { _ in
                guard !changed else { return }
                changed = true
                Thread.sleep(forTimeInterval: 0.3)  // the next batch is read by now
                try store.update(
                    "presents", id: .integer(20), set: ["description": .text("changed"), "email": .text("mid@x.org")])
            }
            #expect(try store.get("presents", id: .integer(20))?["description"] == .text("changed"), "\(job)")
            #expect(
                try store.find("presents", where: "email", equals: .text("MID@x.org")).map { $0["id"] } == [
                    .integer(20)
                ], "\(job)")
            #expect(try store.verify().isIntact, "\(job)")
            changed = false
        }
    }

    @Test func writerWinsOverAJobOnSQLite() throws {
        let folder = try Folder()
        try Self.writerWinsOverAJob(try Self.filled(folder))
    }

    @Test func reindexKeepsFindsWorkingThroughout() throws {
        let folder = try Folder()
        let store = try Self.filled(folder)
        let expected = try Self.emails(store, "u2@x.org")
        #expect(try expected.count == 6 && Self.indexVersions(folder) == [1])
        #expect(throws: Stop.self) { try store.reindex(batchSize: 10) { _ in throw Stop() } }
        #expect(try Self.indexVersions(folder) == [1, 2])
        #expect(try Self.emails(store, "u2@x.org") == expected)
        let other = try RecordStore.open(sqlite: folder.database, secret: RecordStoreTests.passphrase)
        #expect(try Self.emails(other, "u2@x.org") == expected)
        let added = try other.put(["to": .text("new"), "email": .text("u2@x.org")], into: "presents")
        #expect(throws: CofferError(.refused, "")) { try other.rotateKeys() }
        let report = try store.reindex(batchSize: 10)
        #expect(report.resumed && report.changed == 40, "\(report)")
        #expect(try Self.indexVersions(folder) == [2])
        #expect(try Self.emails(other, "u2@x.org") == expected.union([added]))
        #expect(try store.verify().isIntact)
        let queue = try DatabaseQueue(path: folder.database)
        #expect(
            try queue.read {
                try String.fetchAll($0, sql: "SELECT name FROM coffer_meta WHERE name LIKE 'index_root.%'")
            } == ["index_root.2"])
    }

    /// A clear column of an existing database is sealed in place; the
    /// column stays searchable half way, and no clear value survives.
    @Test func migrationSealsAnAdoptedColumnInPlace() throws {
        let folder = try Folder()
        let plain = try DatabaseQueue(path: folder.database)
        var emails: [String] = []
        try plain.write { db in
            try db.execute(sql: "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, email TEXT)")
            for index in 0..<60 {
                let email = "person-\(index % 9)-\(UUID().uuidString.prefix(8))@Mail.org"
                emails.append(email)
                try db.execute(
                    sql: "INSERT INTO users (name, email) VALUES (?, ?)",
                    arguments: ["n\(index)", index == 7 ? nil : email])
            }
        }
        try plain.close()
        // The scan at the end can see what it looks for.
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder.database)).range(of: Data(emails[59].utf8)) != nil)
        let schema = try StoreSchema(tables: [
            .init(
                name: "users", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer), .init(name: "name", type: .text),
                    .init(name: "email", type: .text),
                ])
        ])
        let store = try RecordStore.adopt(
            sqlite: folder.database, schema: schema, secret: RecordStoreTests.passphrase, kdf: RecordStoreTests.fast)
        #expect(throws: CofferError(.refused, "")) {
            try RecordStore.adopt(sqlite: folder.database, schema: schema, secret: RecordStoreTests.passphrase)
        }
        let index = StoreSchema.Index(name: "email_exact", transforms: [.lowercase], bits: 4)
        #expect(throws: Stop.self) {
            try store.migrate("users", field: "email", bind: ["name"], indexes: [index], batchSize: 25) { _ in
                throw Stop()
            }
        }
        #expect(try store.schema.table("users").field("email")?.sealed == true)
        // Half way: sealed rows found through the index, clear rows in the clear.
        for probe in [0, 3, 30, 59] {
            let found = try store.find("users", where: "email", equals: .text(emails[probe].uppercased()))
            #expect(
                Set(found.compactMap { $0["id"] })
                    == Set(
                        emails.indices.filter { $0 != 7 && emails[$0] == emails[probe] }.map {
                            StoreValue.integer(Int64($0 + 1))
                        }))
        }
        #expect(try store.get("users", id: .integer(40))?["email"] == .text(emails[39]))
        try store.update("users", id: .integer(50), set: ["name": .text("renamed")])
        #expect(throws: CofferError(.refused, "")) { try store.migrate("users", field: "name") }
        let report = try store.migrate("users", field: "email", bind: ["name"], indexes: [index], batchSize: 25)
        #expect(report.resumed && report.rows == 60 && report.changed == 2 * (60 - 1), "\(report)")
        #expect(try store.verify().isIntact)
        #expect(try store.find("users", where: "email", equals: .null).map { $0["id"] } == [.integer(8)])
        #expect(try store.get("users", id: .integer(50))?["name"] == .text("renamed"))
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        for file in files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + file))
            for email in emails { #expect(bytes.range(of: Data(email.utf8)) == nil, "\(file) keeps \(email)") }
        }
        #expect(throws: CofferError(.refused, "")) { try store.migrate("users", field: "email") }
        let again = try store.migrate("users", field: "email", bind: ["name"], indexes: [index])
        #expect(again.rows == 0 && again.changed == 0 && !again.resumed)
    }

    /// Notes: a clear title, a sealed body bound to it, a clear tag, and `last`.
    static func notes(last: StoreSchema.Field) throws -> StoreSchema {
        try StoreSchema(tables: [
            .init(
                name: "notes", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer), .init(name: "title", type: .text),
                    .init(name: "body", type: .text, sealed: true, bind: ["title"]),
                    .init(name: "tag", type: .text), last,
                ])
        ])
    }

    /// A store's own STRICT table is rebuilt so its typed column can hold
    /// sealed cells; primary keys, bytes and fields other cells bind are refused.
    @Test func migrationOfAStoresOwnColumn() throws {
        let folder = try Folder()
        let schema = try Self.notes(last: .init(name: "blob", type: .bytes))
        let store = try RecordStore.create(
            sqlite: folder.database, schema: schema, secret: RecordStoreTests.passphrase, kdf: RecordStoreTests.fast)
        for index in 0..<12 {
            try store.put(
                ["title": .text("n\(index)"), "body": .text("b\(index)"), "tag": .text("tag-\(index % 4)")],
                into: "notes")
        }
        #expect(throws: CofferError(.invalidArgument, "")) { try store.migrate("notes", field: "id") }
        #expect(throws: CofferError(.invalidArgument, "")) { try store.migrate("notes", field: "nothing") }
        #expect(throws: CofferError(.invalidArgument, "")) { try store.migrate("notes", field: "title") }
        #expect(throws: CofferError(.invalidArgument, "")) { try store.migrate("notes", field: "blob") }
        #expect(try store.pendingJob() == nil)
        let report = try store.migrate("notes", field: "tag", indexes: [.init(name: "tag_exact", bits: 8)])
        #expect(report.rows == 12 && report.changed == 24, "\(report)")
        #expect(try store.find("notes", where: "tag", equals: .text("tag-1")).count == 3)
        #expect(try store.verify().isIntact)
        let queue = try DatabaseQueue(path: folder.database)
        #expect(try queue.read { try String.fetchAll($0, sql: "SELECT DISTINCT typeof(tag) FROM notes") } == ["blob"])
        #expect(try store.get("notes", id: .integer(3))?["body"] == .text("b2"))
    }
}

/// The planner reads the real values: the band, the recommendation, the
/// multiplier, and a refusal for a field with too few values.
@Suite struct StorePlanTests {
    @Test func planFromRealValues() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast)
        try store.put(
            contentsOf: (0..<2000).map {
                ["to": .text($0 % 2 == 0 ? "yes" : "no"), "email": .text(" User\($0 % 500)@x.org")]
            }, into: "presents")
        // Sealed, opened, trimmed and lowercased: 500 values, 4 rows each.
        let plan = try store.plan("presents", field: "email")
        #expect(plan.rows == 2000 && plan.sampled == 2000 && plan.estimatedDistinct == 500, "\(plan)")
        #expect(plan.candidates.filter(\.inBand).map(\.bits) == [5, 6, 7])
        #expect(plan.recommendedBits == 7 && plan.refusal == nil)
        let seven = try #require(plan.candidates.first { $0.bits == 7 })
        // One query's 4 true rows, plus 1996 others spread over 128 buckets.
        #expect(abs(seven.multiplier - (4 + 1996.0 / 128) / 4) < 0.01 && abs(seven.anonymitySet - 500.0 / 128) < 0.01)
        #expect(plan.bitsForMultiplier1_5 == 10)
        // Without the transforms, case and spaces make no difference here; a prefix of 1 does.
        #expect(try store.plan("presents", field: "email", transforms: [.trim, .first(1)]).refusal != nil)
        let yesNo = try store.plan("presents", field: "to")
        #expect(yesNo.estimatedDistinct == 2 && yesNo.recommendedBits == nil && yesNo.refusal != nil)
        #expect(yesNo.warnings.count == 1 && !yesNo.description.contains("yes"))
        // A sample of 500 rows estimates the distinct count.
        let sampled = try store.plan("presents", field: "email", sampleSize: 500)
        #expect(sampled.sampled == 500 && (300...800).contains(sampled.estimatedDistinct), "\(sampled)")
        #expect(throws: CofferError(.invalidArgument, "")) { try store.plan("presents", field: "colour") }
    }
}

/// The async twins give what the blocking calls give, from many tasks at once.
@Suite struct StoreAsyncTests {
    @Test func asyncTwinsFromManyTasks() async throws {
        let folder = try RecordStoreTests.Folder()
        let store = try await RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast)
        let ids = try await withThrowingTaskGroup(of: StoreValue.self) { group in
            for index in 0..<40 {
                group.addTask {
                    try await store.put(
                        [
                            "to": .text("t\(index % 4)"), "description": .text("d\(index)"),
                            "email": .text("e\(index % 8)@x.org"),
                        ],
                        into: "presents")
                }
            }
            return try await group.reduce(into: Set<StoreValue>()) { $0.insert($1) }
        }
        #expect(ids.count == 40)
        #expect(try await store.find("presents", where: "email", equals: .text("E3@x.org")).count == 5)
        #expect(try await store.find("presents", where: ["to": .text("t1"), "email": .text("e1@x.org")]).count == 5)
        let updated = try await store.update("presents", id: .integer(1), set: ["description": .text("changed")])
        #expect(updated?["description"] == .text("changed"))
        #expect(try await store.get("presents", id: .integer(1))?["description"] == .text("changed"))
        #expect(try await store.delete("presents", id: .integer(2)))
        #expect(try await store.verify().rows == 39)
    }
}
