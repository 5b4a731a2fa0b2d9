import Coffer
import CofferStore
import Foundation
import Testing

/// Closure-scoped transactions: all or nothing, one snapshot, no use
/// outside the closure, on SQLite and on PostgreSQL.
@Suite struct StoreTransactionTests {
    struct Abort: Error {}

    static func exercise(_ store: RecordStore) async throws {
        let scarf = try blocking(store)
        // The async twins (chosen in async code).
        let late = try await store.write { tx in
            try tx.put(["to": .text("Gran"), "description": .text("tea")], into: "presents")
        }
        let both = try await store.read { tx in try tx.find("presents", where: "to", equals: .text("Gran")).count }
        #expect(both == 2 && late != scarf)
        #expect(try await store.verify().isIntact)
    }

    static func blocking(_ store: RecordStore) throws -> StoreValue {
        // A throw half way leaves nothing of the closure's writes.
        #expect(throws: Abort.self) {
            try store.write { tx in
                try tx.put(
                    ["to": .text("Ann"), "description": .text("kept?"), "email": .text("ann@x.org")], into: "presents")
                try tx.put(["to": .text("Bob"), "description": .text("kept?")], into: "presents")
                throw Abort()
            }
        }
        #expect(try store.find("presents", where: "to", equals: .text("Ann")).isEmpty)
        // Committed together: a put, an update of it, a delete, seen inside before the commit.
        let (scarf, kite) = try store.write { tx in
            let scarf = try tx.put(
                ["to": .text("Grandma"), "description": .text("a scarf"), "email": .text("gran@x.org")],
                into: "presents")
            let kite = try tx.put(["to": .text("Sam"), "description": .text("a kite")], into: "presents")
            #expect(try tx.find("presents", where: "email", equals: .text("GRAN@x.org")).count == 1)
            try tx.update("presents", id: scarf, set: ["to": .text("Gran")])
            #expect(try tx.delete("presents", id: kite))
            return (scarf, kite)
        }
        #expect(try store.get("presents", id: scarf)?["to"] == .text("Gran"))
        #expect(try store.get("presents", id: kite) == nil)
        // A read sees one snapshot and cannot write; nothing escapes its closure.
        var escaped: StoreTransaction?
        let found = try store.read { tx in
            escaped = tx
            #expect(throws: CofferError(.refused, "")) { try tx.put(["to": .text("x")], into: "presents") }
            #expect(throws: CofferError(.refused, "")) { try tx.delete("presents", id: scarf) }
            return (try tx.find("presents", where: "to", equals: .text("Gran")), try tx.get("presents", id: scarf))
        }
        #expect(found.0.count == 1 && found.1?["description"] == .text("a scarf"))
        #expect(throws: CofferError(.refused, "")) { try escaped?.get("presents", id: scarf) }
        return scarf
    }

    @Test func onSQLite() async throws {
        let folder = try RecordStoreTests.Folder()
        let store = try await RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast)
        try await Self.exercise(store)
    }

    #if Server
    @Test(.enabled(if: PostgresStoreTests.available)) func onPostgres() async throws {
        try await Self.exercise(try PostgresStoreTests.store(try RecordStoreTests.schema(), in: "transactions"))
    }
    #endif
}
