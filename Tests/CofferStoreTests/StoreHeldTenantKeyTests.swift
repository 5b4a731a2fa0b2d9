import Coffer
import CofferKeychain
import Foundation
import GRDB
import Testing

@testable import CofferStore

#if Server
import CofferStorePostgres
#endif

/// Tables whose tenants' keys are held outside the database
/// (`"tenantKeys": "holder"`, docs/store.md, "Tenants"): each tenant's key
/// row is wrapped under the holder's key for that tenant as well as the
/// store's ring; without the holder such a table is unavailable; a shred
/// destroys the key at the holder, after which a copy of the row taken
/// before (a backup's) no longer opens.
@Suite struct StoreHeldTenantKeyTests {
    typealias Backend = StoreQueryTests.Backend

    /// A holder that counts what it is asked, over a keychain's.
    final class Counting: TenantKeyHolder {
        let inner: KeychainTenantKeyHolder
        let asked = Locked([String]())
        init(_ inner: KeychainTenantKeyHolder) { self.inner = inner }
        var location: String { inner.location }
        func currentKey(tenant: String) throws -> HeldTenantKey {
            asked.withLock { $0.append("current " + tenant) }
            return try inner.currentKey(tenant: tenant)
        }
        func key(tenant: String, version: UInt32) throws -> HeldTenantKey {
            asked.withLock { $0.append("key " + tenant) }
            return try inner.key(tenant: tenant, version: version)
        }
        func destroy(tenant: String) throws {
            asked.withLock { $0.append("destroy " + tenant) }
            try inner.destroy(tenant: tenant)
        }
    }

    static func schema() throws -> StoreSchema {
        var schema = try StoreTenantTests.schema()
        schema.tables[0].tenantKeys = .holder
        return try StoreSchema(tables: schema.tables)
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

    @Test(arguments: Backend.allCases) func aHolderKeepsEachTenantsKeyAndItsDestroyReachesEveryCopy(
        _ backend: Backend
    ) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let namespace = "tenants_held_" + String(UUID().uuidString.prefix(8)).lowercased()
        let keychain = InMemoryKeychain()
        let holder = Counting(KeychainTenantKeyHolder(keychain: keychain))
        let store = try Self.store(backend, folder, namespace)
        defer { try? store.close() }
        // Without the holder, the held table says where its keys are, and nothing is made.
        #expect(throws: CofferError.self) { try store.put(StoreTenantTests.person("acme", 0), into: "people") }
        #expect(try StoreTenantTests.keyRows(store).isEmpty)
        store.holdTenantKeys(at: holder)
        for org in ["acme", "globex"] {
            try store.put(contentsOf: (0..<5).map { StoreTenantTests.person(org, $0) }, into: "people")
        }
        try store.put(["body": "a note"], into: "notes")
        // One key per tenant at the holder; each row's keys wrapped under it (0x03).
        for org in ["acme", "globex"] {
            #expect(
                try keychain.copyData(.password(service: KeychainTenantKeyHolder.defaultService, account: org))
                    .revealed().count == 37)
        }
        let rows = try StoreTenantTests.keyRows(store)
        #expect(rows.count == 2)
        for row in rows {
            let plain = try store.read { work in
                try TenantKeys.outer(
                    Array(row.2), table: "people", tenant: Array(row.1), name: "-", under: work.state.keys)
            }
            #expect(plain.first == 3)
        }
        let found = try store.fetchAll(StoreQuery("people").filter(["org": "acme", "email": "p3@acme.example"]))
        #expect(found.map { $0["bio"] } == [.text("bio 3 of acme")])
        #expect(try store.verify().isIntact)

        // Another handle without the holder: the held table is unavailable, the others are not.
        let bare = try StoreTenantTests.reopen(backend, folder, namespace)
        defer { try? bare.close() }
        let refused = #expect(throws: CofferError.self) {
            _ = try bare.fetchAll(StoreQuery("people").filter(["org": "acme", "email": "p3@acme.example"]))
        }
        #expect(refused?.code == .keyHolderUnavailable)
        #expect(refused?.description.contains("held outside the database") == true)
        #expect(try bare.find("notes", where: "body", equals: "a note").count == 1)

        // The shred destroys acme's key at the holder first; a copy of its
        // row taken before (a backup's) then opens no more.
        let acmeRow = try #require(rows.first { $0.1 == StoreValue.text("acme").encoded.asData }).2
        let shred = try store.shredTenant("people", tenant: "acme")
        #expect(shred.destroyedAtHolder && shred.destroyedKeys && shred.recordsDeleted == 5)
        #expect(holder.asked.withLock { $0 }.contains("destroy acme"))
        let fromBackup = #expect(throws: CofferError.self) {
            _ = try store.read { work in
                try TenantKeys.openSet(
                    Array(acmeRow), table: "people", tenant: StoreValue.text("acme").encoded, name: "\"acme\"",
                    under: work.state.keys,
                    held: HeldTenant(holder: holder, subject: "acme"))
            }
        }
        #expect(fromBackup?.code == .keyNotFound)
        #expect(fromBackup?.description.contains("was shredded at the keychain") == true)
        // A new key made for the name later (a keychain keeps no history)
        // does not open the old row either.
        _ = try holder.currentKey(tenant: "acme")
        let remade = #expect(throws: CofferError.self) {
            _ = try store.read { work in
                try TenantKeys.openSet(
                    Array(acmeRow), table: "people", tenant: StoreValue.text("acme").encoded, name: "\"acme\"",
                    under: work.state.keys, held: HeldTenant(holder: holder, subject: "acme"))
            }
        }
        #expect(remade?.code == .keyNotFound)
        #expect(try store.fetchCount(StoreQuery("people").filter("org", equals: "globex")) == 5)
        #expect(try store.verify().isIntact)
    }

    /// A shred stopped between its two steps (a kill after the holder
    /// destroyed the key, before the tombstone's commit) leaves the tenant
    /// unopenable, not half-open; the next shred finishes it.
    @Test(arguments: Backend.allCases) func aShredStoppedAfterTheHolderIsFinishedByTheNext(_ backend: Backend) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let namespace = "tenants_held_kill_" + String(UUID().uuidString.prefix(8)).lowercased()
        let holder = KeychainTenantKeyHolder(keychain: InMemoryKeychain())
        let store = try Self.store(backend, folder, namespace)
        defer { try? store.close() }
        store.holdTenantKeys(at: holder)
        store.heldTenantKeyLifetime = 0
        for org in ["acme", "globex"] {
            try store.put(contentsOf: (0..<3).map { StoreTenantTests.person(org, $0) }, into: "people")
        }
        try holder.destroy(tenant: "acme")  // the shred's first step, and then the kill
        let read = #expect(throws: CofferError.self) {
            _ = try store.fetchAll(StoreQuery("people").filter("org", equals: "acme"))
        }
        #expect(read?.code == .keyNotFound)
        #expect(try store.fetchCount(StoreQuery("people").filter("org", equals: "globex")) == 3)
        let shred = try store.shredTenant("people", tenant: "acme")
        #expect(shred.destroyedKeys && shred.destroyedAtHolder && shred.recordsDeleted == 3)
        #expect(try store.fetchAll(StoreQuery("people").filter("org", equals: "globex")).count == 3)
        #expect(try store.verify().isIntact)
    }

    /// Opened keys of a held tenant are kept for the lifetime, then asked
    /// of the holder again; 0 asks at every use.
    @Test func heldKeysAreAskedForAgainAfterTheirLifetime() throws {
        let folder = try RecordStoreTests.Folder()
        let holder = Counting(KeychainTenantKeyHolder(keychain: InMemoryKeychain()))
        let store = try Self.store(.sqlite, folder, "lifetime")
        defer { try? store.close() }
        store.holdTenantKeys(at: holder)
        try store.put(StoreTenantTests.person("acme", 1), into: "people")
        let asked = { holder.asked.withLock { $0 }.filter { $0.hasPrefix("key ") }.count }
        let start = asked()
        for _ in 0..<3 { _ = try store.fetchAll(StoreQuery("people").filter("org", equals: "acme")) }
        #expect(asked() - start <= 1, "kept for 60 seconds by default")
        store.heldTenantKeyLifetime = 0
        let before = asked()
        for _ in 0..<3 { _ = try store.fetchAll(StoreQuery("people").filter("org", equals: "acme")) }
        #expect(asked() - before == 3)
    }

    @Test func theSchemaSaysWhereTenantKeysAreAndChecksIt() throws {
        let json = { (table: String) in
            Data(
                #"{"tables": [{"name": "t", "primaryKey": "id", \#(table) "fields": [{"name": "id", "type": "integer"}, {"name": "org", "type": "text"}]}]}"#
                    .utf8)
        }
        let held = try StoreSchema(json: json(#""tenant": "org", "tenantKeys": "holder","#))
        #expect(held.tables[0].tenantKeys == .holder)
        #expect(throws: CofferError.self) { _ = try StoreSchema(json: json(#""tenantKeys": "holder","#)) }
        #expect(throws: (any Error).self) {
            _ = try StoreSchema(json: json(#""tenant": "org", "tenantKeys": "helder","#))
        }
    }
}
