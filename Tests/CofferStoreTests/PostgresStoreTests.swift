#if Server
import Coffer
import CofferStore
import CofferStorePostgres
import Foundation
import Testing

/// The same store on a real PostgreSQL server (scripts/with-postgres starts
/// one; in CI its absence is a failure, elsewhere these tests are skipped).
@Suite(.serialized) struct PostgresStoreTests {
    struct Server {
        let url: String
        let password: String
    }

    /// The test cluster as the suite reaches it: by the name its
    /// certificate holds, over TLS verified against the CA made for it.
    static let server: Server? = {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["COFFER_TEST_POSTGRES_URL"],
            let file = environment["COFFER_TEST_POSTGRES_PASSWORD_FILE"],
            let password = try? String(contentsOfFile: file, encoding: .utf8)
        else { return nil }
        guard let ca = environment["COFFER_TEST_POSTGRES_CA"], let port = environment["COFFER_TEST_POSTGRES_PORT"]
        else {
            return Server(url: url + "?", password: password)
        }
        return Server(
            url: "postgres://coffer@localhost:\(port)/coffer?sslmode=verify-full&sslrootcert=\(ca)&",
            password: password)
    }()

    static var available: Bool {
        if server == nil && ProcessInfo.processInfo.environment["CI"] == "true" {
            Issue.record("CI runs these tests under scripts/with-postgres; COFFER_TEST_POSTGRES_URL is not set")
        }
        return server != nil
    }

    /// A store in a schema of its own, so tests do not meet.
    static func url(_ namespace: String) throws -> String { try #require(server).url + "schema=" + namespace }

    static func store(_ schema: StoreSchema, in namespace: String) throws -> RecordStore {
        try RecordStore.create(
            postgres: try url(namespace), password: try #require(server).password, schema: schema,
            secret: RecordStoreTests.passphrase, kdf: RecordStoreTests.fast)
    }

    @Test(.enabled(if: available)) func theSeedsPresentsOnPostgres() throws {
        let server = try #require(Self.server)
        let store = try Self.store(try RecordStoreTests.schema(bits: 3), in: "seed")
        var plain: [StoreValue: String] = [:]
        for index in 0..<60 {
            let email = "user\(index % 13)@example.org"
            let id = try store.put(
                [
                    "to": .text("t\(index % 4)"), "description": .text("gift \(index)"),
                    "email": .text(" " + email.uppercased()),
                ],
                into: "presents")
            plain[id] = email
        }
        #expect(try store.get("presents", id: .integer(5))?["description"] == .text("gift 4"))
        for wanted in ["user3@example.org", "user12@example.org", "nobody@example.org"] {
            let found = Set(try store.find("presents", where: "email", equals: .text(wanted)).compactMap { $0["id"] })
            #expect(found == Set(plain.filter { $0.value == wanted }.keys), "\(wanted)")
        }
        #expect(try store.find("presents", where: "to", equals: .text("t1")).count == 15)
        #expect(throws: CofferError(.refused, "")) {
            try store.put(["id": .integer(5), "to": .text("again")], into: "presents")
        }
        try store.update("presents", id: .integer(7), set: ["to": .text("moved"), "email": .text("new@example.org")])
        #expect(
            try store.find("presents", where: "email", equals: .text("NEW@example.org")).map { $0["to"] } == [
                .text("moved")
            ])
        #expect(try store.delete("presents", id: .integer(8)))
        #expect(try store.verify().isIntact)
        // Opened again with the passphrase only; a wrong one is refused.
        let again = try RecordStore.open(
            postgres: try Self.url("seed"), password: server.password, secret: RecordStoreTests.passphrase)
        #expect(try again.get("presents", id: .integer(7))?["description"] == .text("gift 6"))
        #expect(throws: CofferError(.wrongPassword, "")) {
            try RecordStore.open(
                postgres: try Self.url("seed"), password: server.password, secret: .password(Array("guess".utf8)))
        }
        #expect(throws: CofferError(.refused, "")) { try Self.store(try RecordStoreTests.schema(), in: "seed") }
    }

    /// Reads skip their transaction while the epoch holds still: a second
    /// handle's reindex and key rotation move it, and the first handle's
    /// finds, gets and verify still answer exactly (they read again in a
    /// transaction, with the state reloaded).
    @Test(.enabled(if: available)) func readsFollowAnotherHandlesJobs() throws {
        let server = try #require(Self.server)
        let first = try Self.store(try RecordStoreTests.schema(bits: 2), in: "snapshots")
        let second = try RecordStore.open(
            postgres: try Self.url("snapshots"), password: server.password, secret: RecordStoreTests.passphrase)
        var emails: [StoreValue: String] = [:]
        for index in 0..<30 {
            let email = "p\(index % 7)@example.org"
            emails[
                try first.put(
                    ["to": .text("t"), "description": .text("d\(index)"), "email": .text(email)], into: "presents")] =
                email
        }
        func check(_ store: RecordStore, _ moment: String) throws {
            for wanted in ["p0@example.org", "p6@example.org", "none@example.org"] {
                let found = Set(
                    try store.find("presents", where: "email", equals: .text(wanted)).compactMap { $0["id"] })
                #expect(found == Set(emails.filter { $0.value == wanted }.keys), "\(wanted) \(moment)")
            }
            #expect(try store.get("presents", id: .integer(3))?["description"] == .text("d2"), "\(moment)")
        }
        try check(first, "before")
        _ = try second.reindex()
        try check(first, "after a reindex by another handle")
        _ = try second.rotateKeys()
        try check(first, "after a key rotation by another handle")
        let id = try second.put(
            ["to": .text("t"), "description": .text("late"), "email": .text("p0@example.org")], into: "presents")
        emails[id] = "p0@example.org"
        try check(first, "after a put by another handle")
        #expect(try first.verify().isIntact)
    }

    @Test(.enabled(if: available)) func writerWinsOverAJobOnPostgres() throws {
        let store = try Self.store(try RecordStoreTests.schema(bits: 3), in: "writerwins")
        try store.put(
            contentsOf: (0..<40).map {
                ["to": .text("t\($0 % 5)"), "description": .text("gift \($0)"), "email": .text("u\($0 % 7)@x.org")]
            }, into: "presents")
        try StoreJobTests.writerWinsOverAJob(store)
    }

    /// A clear text column and a clear integer column of a PostgreSQL store
    /// are sealed in place: the column becomes BYTEA with each value
    /// encoded, finds are exact half way (sealed rows through the index,
    /// the rest in the clear), a second handle writes sealed cells
    /// meanwhile, and at the end every cell is sealed and verified.
    @Test(.enabled(if: available)) func migrationInPlaceOnPostgres() throws {
        let server = try #require(Self.server)
        let schema = try StoreJobTests.notes(last: .init(name: "score", type: .integer))
        let store = try Self.store(schema, in: "migration")
        var tags: [StoreValue: StoreValue] = [:]
        for index in 0..<30 {
            let tag: StoreValue = index % 10 == 9 ? .null : .text("Tag-\(index % 4)")
            tags[
                try store.put(
                    [
                        "title": .text("n\(index)"), "body": .text("b\(index)"), "tag": tag,
                        "score": .integer(Int64(index % 3)),
                    ], into: "notes")] = tag
        }
        func check(_ handle: RecordStore, _ moment: String) throws {
            for wanted in ["Tag-1", "Tag-3", "none"] {
                let found = Set(try handle.find("notes", where: "tag", equals: .text(wanted)).compactMap { $0["id"] })
                #expect(found == Set(tags.filter { $0.value == .text(wanted) }.keys), "\(wanted) \(moment)")
            }
            #expect(try handle.get("notes", id: .integer(4))?["tag"] == .text("Tag-3"), "\(moment)")
        }
        #expect(throws: StoreJobTests.Stop.self) {
            try store.migrate("notes", field: "tag", indexes: [.init(name: "tag_exact", bits: 6)], batchSize: 8) { _ in
                throw StoreJobTests.Stop()
            }
        }
        try check(store, "half way")
        let other = try RecordStore.open(
            postgres: try Self.url("migration"), password: server.password, secret: RecordStoreTests.passphrase)
        try check(other, "half way, another handle")
        let late = try other.put(["title": .text("late"), "tag": .text("Tag-1"), "score": .integer(7)], into: "notes")
        tags[late] = .text("Tag-1")
        #expect(try store.verify().isIntact)
        let report = try store.migrate(
            "notes", field: "tag", indexes: [.init(name: "tag_exact", bits: 6)], batchSize: 8)
        #expect(report.resumed && report.rows == 31, "\(report)")
        try check(store, "after")
        try check(other, "after, another handle")
        let integers = try store.migrate("notes", field: "score", indexes: [.init(name: "score_exact", bits: 4)])
        #expect(integers.rows == 31 && integers.changed == 62, "\(integers)")
        #expect(try store.find("notes", where: "score", equals: .integer(2)).count == 10)
        // Every row's body, tag and score are sealed cells now, and all open.
        let verification = try store.verify()
        #expect(verification.isIntact && verification.cells == 31 * 3, "\(verification)")
    }
}
#endif
