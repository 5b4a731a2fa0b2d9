import Coffer
import Foundation
import GRDB
import Testing

@testable import CofferStore

#if Server
import CofferStorePostgres
#endif

/// Tables kept per tenant (docs/store.md, "Tenants"): each tenant's cells
/// and index values under keys of its own, made once at its first write,
/// found only by naming the tenant, and erased alone.
@Suite struct StoreTenantTests {
    typealias Backend = StoreQueryTests.Backend

    static func schema() throws -> StoreSchema {
        try StoreSchema(tables: [
            .init(
                name: "people", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer), .init(name: "org", type: .text),
                    .init(name: "name", type: .text),
                    .init(
                        name: "email", type: .text, sealed: true,
                        indexes: [.init(name: "email_exact", transforms: [.trim, .lowercase], bits: 16)]),
                    .init(name: "bio", type: .text, sealed: true, bind: ["name"]),
                    .init(
                        name: "tags", type: .text, sealed: true, indexes: [.init(name: "tag", bits: 16, tokens: .words)]
                    ),
                ], tenant: "org"),
            .init(
                name: "notes", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer),
                    .init(name: "body", type: .text, sealed: true, indexes: [.init(name: "body_exact", bits: 16)]),
                ]),
        ])
    }

    static func person(_ org: String, _ number: Int, email: String? = nil) -> StoreRecord {
        [
            "org": .text(org), "name": .text("n\(number)"), "email": .text(email ?? "p\(number)@\(org).example"),
            "bio": .text("bio \(number) of \(org)"), "tags": .text("red team\(number % 3)"),
        ]
    }

    /// The stored tenant key rows: table, tenant (encoded) and sealed keys.
    static func keyRows(_ store: RecordStore) throws -> [(String, Data, Data)] {
        try store.read { work in
            try work.db.rows("SELECT tbl, tenant, keys FROM \(TenantKeys.table) ORDER BY tbl, tenant").map {
                (
                    String.fromDatabaseValue($0["tbl"]!)!, Data.fromDatabaseValue($0["tenant"]!)!,
                    Data.fromDatabaseValue($0["keys"]!)!
                )
            }
        }
    }

    @Test(arguments: Backend.allCases) func tenantsAreSealedFoundAndIndexedApart(_ backend: Backend) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let store = try StoreQueryTests.store(try Self.schema(), on: backend, in: folder, name: "tenants_apart")
        defer { try? store.close() }
        try store.put(contentsOf: (0..<5).map { Self.person("acme", $0) }, into: "people")
        try store.put(contentsOf: [Self.person("globex", 0, email: "p0@acme.example")], into: "people")
        try store.put(["body": "a note"], into: "notes")
        #expect(try Self.keyRows(store).map(\.0) == ["people", "people"], "one key set per tenant, none for notes")

        let acme = try store.fetchAll(StoreQuery("people").filter(["org": "acme", "email": " P0@ACME.example"]))
        #expect(acme.map { $0["bio"] } == [.text("bio 0 of acme")])
        let globex = try store.fetchAll(StoreQuery("people").filter(["org": "globex", "email": "p0@acme.example"]))
        #expect(globex.map { $0["bio"] } == [.text("bio 0 of globex")])
        let tagged = try store.fetchAll(
            StoreQuery("people").filter("org", equals: "acme").filter("tags", hasToken: "team1"))
        #expect(tagged.map { $0["name"] } == [.text("n1"), .text("n4")])
        #expect(try store.fetchCount(StoreQuery("people").filter("org", equals: "acme")) == 5)
        #expect(try store.fetchAll(StoreQuery("people").filter("org", equals: "initech")).isEmpty)
        #expect(try store.find("notes", where: "body", equals: "a note").count == 1)

        // The same value in two tenants: unrelated index values.
        let stored = try store.read { work in
            try work.db.rows("SELECT org, email_exact FROM people WHERE email_exact IS NOT NULL ORDER BY id")
        }
        #expect(stored.count == 6)
        #expect(stored[0]["email_exact"] != stored[5]["email_exact"])

        // Queries and changes that would cross tenants are refused.
        #expect(throws: CofferError.self) { try store.find("people", where: "email", equals: "p0@acme.example") }
        #expect(throws: CofferError.self) { try store.fetchAll(StoreQuery("people")) }
        #expect(throws: CofferError.self) {
            try store.put(["name": "no org", "email": "x@example.com"], into: "people")
        }
        #expect(throws: CofferError.self) { try store.update("people", id: 1, set: ["org": "globex"]) }
        #expect(try store.update("people", id: 1, set: ["name": "renamed", "org": "acme"])?["bio"] == "bio 0 of acme")
        #expect(try store.get("people", id: 6)?["email"] == "p0@acme.example")
        let verification = try store.verify()
        #expect(verification.isIntact, "\(verification.problems)")
        #expect(verification.rows == 7)
    }

    /// 100 first writes of one tenant at once, from four handles: one key
    /// set, and every record opens under it.
    @Test(arguments: Backend.allCases) func manyFirstWritesMakeOneKeySet(_ backend: Backend) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let namespace = "tenants_first_" + String(UUID().uuidString.prefix(8)).lowercased()
        let first = try Self.store(backend, folder, namespace)
        defer { try? first.close() }
        let handles = [first] + (try (0..<3).map { _ in try Self.reopen(backend, folder, namespace) })
        defer { for handle in handles.dropFirst() { try? handle.close() } }
        let failures = Locked([String]())
        DispatchQueue.concurrentPerform(iterations: 100) { number in
            do { try handles[number % 4].put(Self.person("newco", number), into: "people") } catch {
                failures.withLock { $0.append("\(number): \(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(try Self.keyRows(first).count == 1)
        let all = try first.fetchAll(StoreQuery("people").filter("org", equals: "newco"))
        #expect(Set(all.compactMap { $0["bio"] }).count == 100)
        #expect(try first.verify().isIntact)
    }

    static func store(_ backend: Backend, _ folder: RecordStoreTests.Folder, _ namespace: String) throws
        -> RecordStore
    {
        switch backend {
        case .sqlite:
            return try StoreQueryTests.store(try schema(), on: backend, in: folder, name: namespace)
        case .postgres:
            #if Server
            return try PostgresStoreTests.store(try schema(), in: namespace)
            #else
            throw CofferError(.unsupported, "PostgreSQL stores come with the Server trait")
            #endif
        }
    }

    static func reopen(_ backend: Backend, _ folder: RecordStoreTests.Folder, _ namespace: String) throws
        -> RecordStore
    {
        switch backend {
        case .sqlite:
            return try RecordStore.open(
                sqlite: folder.database, secret: RecordStoreTests.passphrase, rollbackGuard: nil)
        case .postgres:
            #if Server
            return try RecordStore.open(
                postgres: try PostgresStoreTests.url(namespace),
                password: try #require(PostgresStoreTests.server).password,
                secret: RecordStoreTests.passphrase, rollbackGuard: nil)
            #else
            throw CofferError(.unsupported, "PostgreSQL stores come with the Server trait")
            #endif
        }
    }

    /// A shred destroys one tenant's keys and records; every other tenant
    /// is found and opens as before; the shredded tenant takes no write;
    /// its kept records never open; the record set stays intact.
    @Test(arguments: Backend.allCases) func aShredErasesOneTenantAlone(_ backend: Backend) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let store = try StoreQueryTests.store(try Self.schema(), on: backend, in: folder, name: "tenants_shred")
        defer { try? store.close() }
        for org in ["acme", "globex", "initech"] {
            try store.put(contentsOf: (0..<20).map { Self.person(org, $0) }, into: "people")
        }
        let before = try Self.keyRows(store)
        let acmeKeys = try #require(before.first { $0.1 == StoreValue.text("acme").encoded.asData }).2

        let shred = try store.shredTenant("people", tenant: "acme")
        #expect(shred.recordsDeleted == 20 && shred.destroyedKeys)
        let kept = try store.shredTenant("people", tenant: "initech", keepRecords: true)
        #expect(kept.recordsDeleted == 0 && kept.destroyedKeys)
        #expect(try store.shredTenant("people", tenant: "never").destroyedKeys == false)

        let globex = try store.fetchAll(StoreQuery("people").filter(["org": "globex", "email": "p3@globex.example"]))
        #expect(globex.map { $0["bio"] } == [.text("bio 3 of globex")])
        func shredded(_ body: () throws -> Void) {
            #expect {
                try body()
            } throws: { ($0 as? CofferError)?.code == .keyNotFound }
        }
        shredded { try store.put(Self.person("acme", 99), into: "people") }
        shredded { try store.put(Self.person("never", 1), into: "people") }
        shredded { _ = try store.get("people", id: 41) }  // initech's first, kept
        #expect(try store.get("people", id: 1) == nil)
        let remaining = try Self.keyRows(store)
        #expect(remaining.count == 4)
        #expect(!remaining.contains { $0.2 == acmeKeys })
        #expect(throws: CofferError.self) { try store.shredTenant("notes", tenant: "acme") }

        // Kept records do not open, and verify says so; the digest holds.
        let verification = try store.verify()
        #expect(verification.rows == 40)
        #expect(verification.problemCount == 20)
        #expect(verification.problems.allSatisfy { $0.contains("shredded") }, "\(verification.problems)")
        try store.shredTenant("people", tenant: "initech")
        #expect(try store.verify().isIntact)

        if backend == .sqlite {
            // No copy of acme's sealed keys in the file, its WAL or shared memory.
            try store.close()
            for suffix in ["", "-wal", "-shm"] {
                let bytes = try RecordStoreTests.bytesReadElsewhere(folder.database + suffix) ?? Data()
                #expect(bytes.range(of: acmeKeys) == nil, "acme's keys are still in \(suffix)")
            }
        }
    }

    /// A rotation seals the tenants' key rows under the new key before it
    /// disables the old ones; a reindex leaves tenants' indexes (under
    /// their own roots) as they are. Records open and are found after both.
    @Test func jobsKeepTenantsOpening() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try StoreQueryTests.store(try Self.schema(), on: .sqlite, in: folder, name: "tenant_jobs")
        defer { try? store.close() }
        for org in ["acme", "globex"] {
            try store.put(contentsOf: (0..<30).map { Self.person(org, $0) }, into: "people")
        }
        try store.put(["body": "a note"], into: "notes")
        let sealed = try Self.keyRows(store).map(\.2)
        try store.rotateKeys(batchSize: 7)
        #expect(try Self.keyRows(store).map(\.2).allSatisfy { !sealed.contains($0) })
        try store.reindex(batchSize: 7)
        for org in ["acme", "globex"] {
            let found = try store.fetchAll(
                StoreQuery("people").filter(["org": .text(org), "email": "p7@\(org).example"]))
            #expect(found.map { $0["bio"] } == [.text("bio 7 of \(org)")])
        }
        #expect(try store.find("notes", where: "body", equals: "a note").count == 1)
        #expect(try store.verify().isIntact)
    }

    /// A migration adds a tenant table, and a sealed field to it: the new
    /// field's sealed nulls are sealed under each tenant's keys.
    @Test func migrationsReachTenantTables() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try StoreQueryTests.store(
            try StoreSchema(tables: [try Self.schema().table("notes")]), on: .sqlite, in: folder, name: "tenant_mig")
        defer { try? store.close() }
        var migrator = StoreMigrator()
        migrator.registerMigration("people") { change in try change.addTable(try Self.schema().table("people")) }
        try migrator.migrate(store)
        try store.put(contentsOf: (0..<10).map { Self.person($0 % 2 == 0 ? "even" : "odd", $0) }, into: "people")
        migrator.registerMigration("notes of people") { change in
            try change.addField(.init(name: "note", type: .text, sealed: true, bind: ["name"]), to: "people")
        }
        try migrator.migrate(store)
        try store.update("people", id: 3, set: ["note": "three"])
        #expect(try store.get("people", id: 3)?["note"] == "three")
        #expect(try store.get("people", id: 4)?["note"] == .null)
        #expect(try store.verify().isIntact)
    }

    /// The cache of opened tenants' keys keeps at most its limit, the
    /// least recently used dropped first; records open either way.
    @Test func theTenantKeyCacheIsBounded() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try StoreQueryTests.store(try Self.schema(), on: .sqlite, in: folder, name: "tenant_cache")
        defer { try? store.close() }
        store.tenantKeyCacheLimit = 8
        for org in 0..<40 { try store.put(Self.person("t\(org)", org), into: "people") }
        let cache = store.state.withLock { $0.tenantCache }
        #expect(cache.count <= 8)
        for org in 0..<40 {
            #expect(try store.get("people", id: .integer(Int64(org + 1)))?["bio"] == .text("bio \(org) of t\(org)"))
        }
        #expect(cache.count <= 8)
        store.tenantKeyCacheLimit = 0
        #expect(cache.count == 0)
        #expect(try store.get("people", id: 1)?["org"] == "t0")
    }

    /// The tenant field is checked: a clear text or integer field other
    /// than the primary key; the schema file's member is read, a typo refused.
    @Test func theTenantFieldIsChecked() throws {
        func table(_ tenant: String) -> StoreSchema.Table {
            .init(
                name: "t", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer), .init(name: "org", type: .text),
                    .init(name: "when", type: .date), .init(name: "secret", type: .text, sealed: true),
                ], tenant: tenant)
        }
        for bad in ["id", "secret", "when", "nothere"] {
            #expect(throws: CofferError.self, "tenant \(bad)") { try StoreSchema(tables: [table(bad)]) }
        }
        #expect(try StoreSchema(tables: [table("org")]).tables[0].tenant == "org")
        let json =
            #"{"tables": [{"name": "t", "primaryKey": "id", "tenant": "org", "fields": [{"name": "id", "type": "integer"}, {"name": "org", "type": "integer"}]}]}"#
        #expect(try StoreSchema(json: Array(json.utf8)).tables[0].tenant == "org")
        let typo = json.replacingOccurrences(of: "\"tenant\"", with: "\"tennant\"")
        #expect(throws: CofferError.self) { try StoreSchema(json: Array(typo.utf8)) }
    }

    struct Member: SchemaRecord {
        static let storeTable = "members"
        static let storeSchema = RecordSchema(
            primaryKey: CodingKeys.id, tenant: CodingKeys.team,
            .sealed(CodingKeys.email, indexes: [.init(name: "email_exact", bits: 16)]))
        var id: Int64?
        var team: String
        var email: String
    }

    /// The typed API names the tenant on the record type.
    @Test func aRecordTypeNamesItsTenant() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try StoreSchema(records: [Member.self]),
            secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast, rollbackGuard: nil)
        defer { try? store.close() }
        #expect(store.schema.tables[0].tenant == "team")
        try store.put(Member(id: nil, team: "red", email: "a@example.com"))
        try store.put(Member(id: nil, team: "blue", email: "a@example.com"))
        let red = try store.fetchAll(Member.self, Member.query.filter(["team": "red", "email": "a@example.com"]))
        #expect(red.map(\.team) == ["red"])
        var plain = try StoreSchema(records: [Member.self])
        plain.tables[0].tenant = nil
        #expect(throws: CofferError.self) { try plain.check([Member.self]) }
    }
}

extension Array where Element == UInt8 {
    var asData: Data { Data(self) }
}
