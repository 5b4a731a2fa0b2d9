import Coffer
import CofferStore
import Foundation
import Testing

/// Schema migrations at launch, on SQLite and PostgreSQL: tables, clear and
/// sealed fields and indexes added to a store with records in it.
@Suite struct StoreMigratorTests {
    struct Present: SealedRecord, Equatable {
        static let storeTable = "presents"
        var id: Int64?
        var to: String
        var description: String
        var note: String?
        var shop: String?
    }

    static func migrator(_ extra: Bool = false) -> StoreMigrator {
        var migrator = StoreMigrator()
        migrator.registerMigration("notes and shops") { change in
            try change.addField(
                .init(
                    name: "note", type: .text, sealed: true, bind: ["to"],
                    indexes: [.init(name: "note_exact", transforms: [.lowercase], bits: 12)]), to: "presents")
            try change.addField(.init(name: "shop", type: .text), to: "presents")
            try change.addTable(
                .init(
                    name: "shops", primaryKey: "name",
                    fields: [.init(name: "name", type: .text), .init(name: "owner", type: .text, sealed: true)]))
        }
        if extra {
            migrator.registerMigration("descriptions found") { change in
                try change.addIndex(.init(name: "description_exact", bits: 10), on: "description", of: "presents")
            }
        }
        return migrator
    }

    @Test(arguments: StoreQueryTests.Backend.allCases) func migrationsAddToAStoreWithRecords(
        _ backend: StoreQueryTests.Backend
    ) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let store = try StoreQueryTests.store(
            try RecordStoreTests.schema(bits: 4), on: backend, in: folder, name: "migrator")
        let count = 1_100
        try store.put(
            contentsOf: (0..<count).map { ["to": .text("t\($0 % 7)"), "description": .text("gift \($0 % 50)")] },
            into: "presents")
        #expect(try Self.migrator().migrate(store) == ["notes and shops"])
        #expect(try Self.migrator().migrate(store).isEmpty, "a migration runs once")
        #expect(try Self.migrator().appliedMigrations(store) == ["notes and shops"])
        let old = try store.fetchAll(Present.self, Present.query.filter("to", equals: "t3"))
        #expect(old.count == (0..<count).filter { $0 % 7 == 3 }.count && old.allSatisfy { $0.note == nil })
        var kite = try store.put(Present(id: nil, to: "Sam", description: "a kite", note: "Blue", shop: "Toys"))
        #expect(try store.fetchAll(Present.self, Present.query.filter("note", equals: "blue")) == [kite])
        #expect(try store.find("presents", where: "note", equals: .null).count == count)
        try store.put(["name": "Toys", "owner": "Ann"], into: "shops")
        #expect(try store.get("shops", id: "Toys")?["owner"] == "Ann")

        #expect(try Self.migrator(true).migrate(store) == ["descriptions found"])
        #expect(try store.fetchCount(StoreQuery("presents").filter("description", equals: "gift 7")) == 22)
        kite.note = "green"
        #expect(try store.update(kite))
        #expect(try store.fetchOne(Present.self, Present.query.filter("note", equals: "GREEN")) == kite)
        let verification = try store.verify()
        #expect(verification.isIntact && verification.rows == count + 2, "\(verification)")
    }

    @Test func aFailedMigrationLeavesNothing() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try StoreQueryTests.store(try RecordStoreTests.schema(), on: .sqlite, in: folder, name: "failed")
        try store.put(["to": "Ann", "description": "d"], into: "presents")
        struct Stop: Error {}
        var failing = StoreMigrator()
        failing.registerMigration("half") { change in
            try change.addField(.init(name: "shop", type: .text), to: "presents")
            throw Stop()
        }
        #expect(throws: Stop.self) { try failing.migrate(store) }
        var leaky = StoreMigrator()
        leaky.registerMigration("wide") { change in
            try change.addIndex(.init(name: "d_exact", bits: 40), on: "description", of: "presents")
        }
        #expect(throws: CofferError.self) { try leaky.migrate(store) }
        var twice = StoreMigrator()
        twice.registerMigration("a") { _ in }
        twice.registerMigration("a") { _ in }
        #expect(throws: CofferError.self) { try twice.migrate(store) }
        #expect(try StoreMigrator().appliedMigrations(store).isEmpty)
        #expect(store.schema.tables[0].field("shop") == nil)
        // The column was not added either: the migration can run once fixed.
        var fixed = StoreMigrator()
        fixed.registerMigration("half") { change in
            try change.addField(.init(name: "shop", type: .text), to: "presents")
        }
        #expect(try fixed.migrate(store) == ["half"])
        let reopened = try RecordStore.open(
            sqlite: folder.database, secret: RecordStoreTests.passphrase, rollbackGuard: nil)
        #expect(reopened.schema.tables[0].field("shop") != nil)
        #expect(try fixed.appliedMigrations(reopened) == ["half"])
    }
}
