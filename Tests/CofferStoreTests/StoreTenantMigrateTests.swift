import Coffer
import Foundation
import GRDB
import Testing

@testable import CofferStore

/// A clear field of a table kept per tenant sealed in place (issue 58,
/// part 5): each row's cell under its own tenant's keys, found throughout
/// by its tenant's index values; resumable; a shredded tenant's kept
/// records lose the clear value instead of keeping it.
@Suite struct StoreTenantMigrateTests {
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
                ], tenant: "org")
        ])
    }

    static func person(_ org: String, _ number: Int) -> StoreRecord {
        ["org": .text(org), "name": .text("name \(number) of \(org)"), "email": .text("p\(number)@\(org).example")]
    }

    static func named(_ store: RecordStore, _ org: String, _ number: Int) throws -> [StoreRecord] {
        try store.fetchAll(StoreQuery("people").filter(["org": .text(org), "name": .text("name \(number) of \(org)")]))
    }

    @Test(arguments: Backend.allCases) func aClearFieldIsSealedUnderEachTenantsKeys(_ backend: Backend) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let store = try StoreQueryTests.store(try Self.schema(), on: backend, in: folder, name: "tenant_migrate")
        defer { try? store.close() }
        for org in ["acme", "globex", "initech"] {
            try store.put(contentsOf: (0..<10).map { Self.person(org, $0) }, into: "people")
        }
        try store.shredTenant("people", tenant: "initech", keepRecords: true)

        struct Stop: Error {}
        let index = StoreSchema.Index(name: "name_exact", bits: 16)
        #expect(throws: Stop.self) {
            try store.migrate("people", field: "name", indexes: [index], batchSize: 7) { _ in throw Stop() }
        }
        // Midway: found whether sealed yet or not, and a write seals at once.
        for (org, number) in [("acme", 1), ("globex", 9)] {
            #expect(try Self.named(store, org, number).map { $0["email"] } == [.text("p\(number)@\(org).example")])
        }
        try store.put(Self.person("acme", 10), into: "people")
        let report = try store.migrate("people", field: "name", indexes: [index], batchSize: 7)
        #expect(report.rows > 0)

        let rows = try store.read { (work: StoreWork) in
            try work.db.rows("SELECT org, name FROM people ORDER BY id")
        }
        for row in rows {
            let org = String.fromDatabaseValue(row["org"]!)!
            if org == "initech" {
                #expect(row["name"]?.isNull == true, "a shredded tenant's clear value is gone")
            } else {
                guard case .blob(let cell) = row["name"]?.storage else {
                    Issue.record("\(org)'s name is not sealed")
                    continue
                }
                #expect(cell.first == SealedValue.version)
            }
        }
        for (org, number) in [("acme", 1), ("acme", 10), ("globex", 9)] {
            #expect(try Self.named(store, org, number).map { $0["email"] } == [.text("p\(number)@\(org).example")])
        }
        #expect(try Self.named(store, "globex", 1).count == 1)
        #expect(try Self.named(store, "acme", 1).first?["name"] == .text("name 1 of acme"))
        // Sealed under the tenant's keys: acme's cell copied into globex's row does not open.
        // (Beside the store's own writes, on its connection: as a database writer would.)
        try store.backend.write(exclusive: false) { db in
            let acme = try db.rows("SELECT name FROM people WHERE org = 'acme' ORDER BY id LIMIT 1")[0]["name"]!
            let globex = try db.rows("SELECT id FROM people WHERE org = 'globex' ORDER BY id LIMIT 1")[0]["id"]!
            _ = try db.execute("UPDATE people SET name = ? WHERE id = ?", [acme, globex])
        }
        #expect(throws: CofferError.self) {
            _ = try store.fetchAll(StoreQuery("people").filter("org", equals: "globex"))
        }
    }
}
