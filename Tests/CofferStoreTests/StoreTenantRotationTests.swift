import Coffer
import Foundation
import GRDB
import Testing

@testable import CofferStore

/// A tenant's data key rotated alone (issue 58, part 5): its cells sealed
/// again under a new key, the old key destroyed, every other tenant's row
/// untouched; a run stopped halfway finished by the next; all tenants at once.
@Suite struct StoreTenantRotationTests {
    typealias Backend = StoreQueryTests.Backend

    /// The key ids the cells of `tenant`'s records name.
    static func cellKeyIDs(_ store: RecordStore, _ tenant: String) throws -> Set<UInt32> {
        try store.read { work in
            var ids = Set<UInt32>()
            for row in try work.db.rows("SELECT email, bio, tags FROM people WHERE org = ?", [tenant.databaseValue]) {
                for column in ["email", "bio", "tags"] {
                    guard case .blob(let cell) = row[column]?.storage else { continue }
                    ids.insert(try SealedValue.keyID(of: cell))
                }
            }
            return ids
        }
    }

    @Test(arguments: Backend.allCases) func oneTenantsKeyRotatesAlone(_ backend: Backend) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let store = try StoreQueryTests.store(
            try StoreTenantTests.schema(), on: backend, in: folder, name: "tenant_rotation")
        defer { try? store.close() }
        for org in ["acme", "globex"] {
            try store.put(contentsOf: (0..<25).map { StoreTenantTests.person(org, $0) }, into: "people")
        }
        let before = try StoreTenantTests.keyRows(store)
        let acmeIDs = try Self.cellKeyIDs(store, "acme")
        #expect(acmeIDs.count == 1)

        // Stopped after its first batch, then finished by a second run.
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try store.rotateTenantKeys("people", tenant: "acme", batchSize: 10) { _ in throw Stop() }
        }
        let halfway = try Self.cellKeyIDs(store, "acme")
        #expect(halfway.count == 2, "old and new keys side by side: \(halfway)")
        // A write while the rotation is under way seals under the new key.
        try store.update("people", id: 20, set: ["bio": "changed midway"])
        let report = try store.rotateTenantKeys("people", tenant: "acme", batchSize: 10)
        #expect(report.tenants == 1 && report.rows == 25)
        let after = try Self.cellKeyIDs(store, "acme")
        #expect(after.count == 1 && after.isDisjoint(with: acmeIDs))

        let rows = try StoreTenantTests.keyRows(store)
        #expect(rows[0].2 != before[0].2, "acme's row changed")
        #expect(rows[1].2 == before[1].2, "globex's row is as it was")
        // The old key is gone from acme's keys: one key again.
        let opened = try store.read { work in
            try TenantKeys.openSet(
                Array(rows[0].2), table: "people", tenant: StoreValue.text("acme").encoded, name: "acme",
                under: work.state.keys, held: nil)
        }
        #expect(opened?.keys.count == 1)
        #expect(try store.get("people", id: 20)?["bio"] == "changed midway")
        let found = try store.fetchAll(StoreQuery("people").filter(["org": "acme", "email": "p7@acme.example"]))
        #expect(found.map { $0["bio"] } == [.text("bio 7 of acme")])
        #expect(try store.verify().isIntact)

        // Every tenant at once; a shredded one is passed over.
        try store.shredTenant("people", tenant: "globex")
        try store.put(StoreTenantTests.person("initech", 1), into: "people")
        let all = try store.rotateTenantKeys("people")
        #expect(all.tenants == 2)
        #expect(try Self.cellKeyIDs(store, "acme").isDisjoint(with: after))
        #expect(try store.verify().isIntact)
        #expect(throws: CofferError.self) { try store.rotateTenantKeys("people", tenant: "globex") }
        #expect(throws: CofferError.self) { try store.rotateTenantKeys("notes") }
    }
}
