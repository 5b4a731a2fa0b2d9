import Coffer
import Crypto
import Foundation
import GRDB
import Testing

@testable import CofferStore

/// A tenant's index root replaced alone (issue 58, part 5): its index
/// values computed again under a new root, the old root destroyed, every
/// other tenant's values untouched; finds work throughout; a run stopped
/// halfway finished by the next; every tenant at once.
@Suite struct StoreTenantReindexTests {
    typealias Backend = StoreQueryTests.Backend

    /// Each of `tenant`'s records' stored `email_exact` value, by id.
    static func indexValues(_ store: RecordStore, _ tenant: String) throws -> [Int64: Data] {
        try store.read { (work: StoreWork) in
            var values: [Int64: Data] = [:]
            for row in try work.db.rows("SELECT id, email_exact FROM people WHERE org = ?", [tenant.databaseValue]) {
                guard case .int64(let id) = row["id"]?.storage, case .blob(let value) = row["email_exact"]?.storage
                else { continue }
                values[id] = Data(value)
            }
            return values
        }
    }

    static func versions(_ values: [Int64: Data]) -> Set<UInt16> {
        Set(values.values.map { UInt16($0[$0.startIndex]) << 8 | UInt16($0[$0.startIndex + 1]) })
    }

    static func finds(_ store: RecordStore, _ org: String, _ number: Int) throws -> Bool {
        let exact = try store.fetchAll(
            StoreQuery("people").filter(["org": .text(org), "email": .text(" P\(number)@\(org.uppercased()).example")]))
        let tagged = try store.fetchAll(
            StoreQuery("people").filter("org", equals: .text(org)).filter("tags", hasToken: "team\(number % 3)"))
        return exact.map { $0["bio"] } == [.text("bio \(number) of \(org)")]
            && tagged.contains { $0["bio"] == .text("bio \(number) of \(org)") }
    }

    @Test(arguments: Backend.allCases) func oneTenantsIndexRootIsReplacedAlone(_ backend: Backend) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let store = try StoreQueryTests.store(
            try StoreTenantTests.schema(), on: backend, in: folder, name: "tenant_reindex")
        defer { try? store.close() }
        for org in ["acme", "globex"] {
            try store.put(contentsOf: (0..<25).map { StoreTenantTests.person(org, $0) }, into: "people")
        }
        let acme = try Self.indexValues(store, "acme")
        let globex = try Self.indexValues(store, "globex")
        #expect(acme.count == 25 && Self.versions(acme) == [1])

        // Stopped after its first batch: both roots in use, and found.
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try store.reindexTenant("people", tenant: "acme", batchSize: 10) { _ in throw Stop() }
        }
        #expect(Self.versions(try Self.indexValues(store, "acme")) == [1, 2])
        for number in [0, 15, 24] { #expect(try Self.finds(store, "acme", number), "acme \(number) midway") }
        // A write meanwhile is indexed under the new root, and found.
        try store.update("people", id: 20, set: ["email": "new@acme.example"])
        #expect(
            try store.fetchAll(StoreQuery("people").filter(["org": "acme", "email": "new@acme.example"])).count == 1)

        let report = try store.reindexTenant("people", tenant: "acme", batchSize: 10)
        #expect(report.tenants == 1 && report.rows == 25)
        let after = try Self.indexValues(store, "acme")
        #expect(Self.versions(after) == [2])
        #expect(after.allSatisfy { acme[$0.key] != $0.value }, "every acme value is new")
        #expect(try Self.indexValues(store, "globex") == globex, "globex's values are as they were")
        for number in [0, 15, 24] {
            #expect(try Self.finds(store, "acme", number))
            #expect(try Self.finds(store, "globex", number))
        }
        #expect(
            try store.fetchAll(StoreQuery("people").filter(["org": "acme", "email": "new@acme.example"])).count == 1)
        // The tenant's row keeps one root, the new one: the old is destroyed.
        let rows = try StoreTenantTests.keyRows(store)
        let set = try store.read { work in
            try TenantKeys.openSet(
                Array(rows[0].2), table: "people", tenant: StoreValue.text("acme").encoded, name: "acme",
                under: work.state.keys, held: nil)
        }
        #expect(set?.roots.map(\.version) == [2])
        #expect(try store.verify().isIntact)

        // Every tenant at once; a shredded one is passed over.
        try store.shredTenant("people", tenant: "globex")
        try store.put(contentsOf: (0..<4).map { StoreTenantTests.person("initech", $0) }, into: "people")
        let all = try store.reindexTenant("people")
        #expect(all.tenants == 2 && all.rows == 29)
        #expect(Self.versions(try Self.indexValues(store, "acme")) == [3])
        #expect(Self.versions(try Self.indexValues(store, "initech")) == [2])
        #expect(try Self.finds(store, "initech", 3))
        #expect(try store.verify().isIntact)
    }

    @Test func aKeySetRoundTripsWithEveryShape() throws {
        var set = TenantKeySet.random()
        #expect(set.encoded().first == 1)
        set = set.rotated()
        #expect(set.encoded().first == 2)
        set = try set.reindexed()
        let bytes = set.encoded()
        #expect(bytes.first == 4)
        let decoded = try #require(TenantKeySet(decoding: bytes))
        #expect(decoded.keys.map(\.id) == set.keys.map(\.id) && decoded.roots.map(\.version) == [2, 1])
        #expect(TenantKeySet(decoding: Array(bytes.dropLast())) == nil)
        #expect(TenantKeySet(decoding: [4, 1]) == nil)
        let twice = TenantKeySet(
            keys: set.keys,
            roots: [.init(version: 1, key: .init(size: .bits256)), .init(version: 1, key: .init(size: .bits256))])
        #expect(TenantKeySet(decoding: twice.encoded()) == nil, "two roots of one version")
    }
}
