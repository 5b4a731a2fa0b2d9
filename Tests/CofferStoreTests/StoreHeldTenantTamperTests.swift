import Coffer
import CofferKeychain
import Foundation
import Testing

@testable import CofferStore

/// A held tenant's key row (`"tenantKeys": "holder"`) edited with the
/// sqlite3 tool, as someone who can write the database but holds neither
/// the store's keys nor the holder's: another tenant's row copied over it,
/// one byte of it flipped. Each edit is refused for that tenant alone and
/// reported by `verify`; putting the row's own bytes back opens it again,
/// so the refusal was the edit's.
@Suite struct StoreHeldTenantTamperTests {
    static func sqlite3(_ database: String, _ sql: String) throws -> String {
        let tool = Process()
        tool.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        tool.arguments = ["sqlite3", database, sql]
        let output = Pipe()
        tool.standardOutput = output
        try tool.run()
        let bytes = output.fileHandleForReading.readDataToEndOfFile()
        tool.waitUntilExit()
        try #require(tool.terminationStatus == 0, "sqlite3 (scripts/test installs it) failed on \(sql)")
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A tenant's encoded value as an SQL blob literal.
    static func tenant(_ name: String) -> String {
        "X'" + StoreValue.text(name).encoded.map { String(format: "%02X", $0) }.joined() + "'"
    }

    /// Opens the store with the holder, reads acme's and globex's records
    /// and verifies: acme's error (nil when it opened), globex's count,
    /// and whether verify found the store intact.
    static func look(_ folder: RecordStoreTests.Folder, _ holder: KeychainTenantKeyHolder) throws
        -> (acme: CofferError?, globex: Int, intact: Bool)
    {
        let store = try StoreTenantTests.reopen(.sqlite, folder, "")
        defer { try? store.close() }
        store.holdTenantKeys(at: holder)
        var acme: CofferError?
        do {
            _ = try store.fetchAll(StoreQuery("people").filter("org", equals: "acme"))
        } catch let error as CofferError {
            acme = error
        }
        let globex = try store.fetchAll(StoreQuery("people").filter("org", equals: "globex")).count
        return (acme, globex, try store.verify().isIntact)
    }

    @Test func aHeldKeyRowCopiedOrFlippedWithSqlite3IsRefused() throws {
        let folder = try RecordStoreTests.Folder()
        let holder = KeychainTenantKeyHolder(keychain: InMemoryKeychain())
        do {
            let store = try StoreHeldTenantKeyTests.store(.sqlite, folder, "")
            store.holdTenantKeys(at: holder)
            for org in ["acme", "globex"] {
                try store.put(contentsOf: (0..<4).map { StoreTenantTests.person(org, $0) }, into: "people")
            }
            try store.close()
        }
        let database = folder.database
        let row = { (org: String) in
            try Self.sqlite3(database, "SELECT hex(keys) FROM \(TenantKeys.table) WHERE tenant = \(Self.tenant(org))")
        }
        let original = try row("acme")
        try #require(original.count > 100 && original != (try row("globex")))
        let untouched = try Self.look(folder, holder)
        #expect(untouched.acme == nil && untouched.globex == 4 && untouched.intact)

        // globex's key row copied over acme's: its table and tenant are
        // bound in, so it does not open as acme's, and the record set
        // counts the change.
        _ = try Self.sqlite3(
            database,
            "UPDATE \(TenantKeys.table) SET keys = (SELECT keys FROM \(TenantKeys.table) WHERE tenant = \(Self.tenant("globex"))) WHERE tenant = \(Self.tenant("acme"))"
        )
        let copied = try Self.look(folder, holder)
        #expect(copied.acme?.code == .stateAuthenticationFailed, "globex's keys opened as acme's")
        #expect(copied.acme?.description.contains("changed without the store's keys") == true)
        #expect(copied.globex == 4 && !copied.intact)

        // One byte of acme's own row flipped, in the middle: the row is
        // sealed under the store's ring around the held layer, so the
        // outer seal refuses it before the holder is asked.
        let middle = original.count / 4 * 2
        let flipped =
            String(original.prefix(middle))
            + (original.dropFirst(middle).first == "0" ? "1" : "0") + String(original.dropFirst(middle + 1))
        _ = try Self.sqlite3(
            database, "UPDATE \(TenantKeys.table) SET keys = X'\(flipped)' WHERE tenant = \(Self.tenant("acme"))")
        let bitFlip = try Self.look(folder, holder)
        #expect(bitFlip.acme?.code == .stateAuthenticationFailed, "a flipped key row opened")
        #expect(bitFlip.globex == 4 && !bitFlip.intact)

        // Its own bytes put back: everything opens and verifies again.
        _ = try Self.sqlite3(
            database, "UPDATE \(TenantKeys.table) SET keys = X'\(original)' WHERE tenant = \(Self.tenant("acme"))")
        let restored = try Self.look(folder, holder)
        #expect(restored.acme == nil && restored.globex == 4 && restored.intact)
    }
}
