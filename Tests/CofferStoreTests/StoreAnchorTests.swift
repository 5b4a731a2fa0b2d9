import Coffer
import CofferKeychain
import Foundation
import GRDB
import Testing

@testable import CofferStore

/// Anchors in the library (docs/store.md, "Anchors"): the order of states,
/// a keychain and a folder as anchors, a rollback of rows and digest
/// together (which `verify` alone cannot see) caught by a running store at
/// its next check and by a fresh one at once, and an anchor out of reach.
@Suite struct StoreAnchorTests {
    static func state(_ epoch: UInt64, _ sequences: [UInt64], _ digest: Character = "a") -> StoreAnchorState {
        StoreAnchorState(
            epoch: epoch, sequences: ["t": sequences + Array(repeating: 0, count: 16 - sequences.count)],
            digest: String(repeating: digest, count: 64))
    }

    @Test func statesAreOrderedByExtension() {
        let base = Self.state(2, [3, 1])
        #expect(base.compared(to: base) == .same)
        #expect(Self.state(2, [4, 1], "b").compared(to: base) == .newer)
        #expect(Self.state(3, [3, 1], "b").compared(to: base) == .newer)
        #expect(base.compared(to: Self.state(2, [4, 1], "b")) == .older)
        #expect(Self.state(2, [3, 1], "b").compared(to: base) == .forked)
        #expect(Self.state(2, [4, 0], "b").compared(to: base) == .forked)
        #expect(Self.state(1, [9, 9], "b").compared(to: base) == .forked)
        // A table the anchored state lacks is new; one it has cannot vanish.
        var more = base
        more.sequences["u"] = Array(repeating: 0, count: 16)
        more.digest = String(repeating: "c", count: 64)
        #expect(more.compared(to: base) == .newer)
        #expect(base.compared(to: more) == .older)
        #expect(throws: CofferError.self) { _ = try StoreAnchorState(json: Data("{\"epoch\": 1}".utf8)) }
    }

    /// An anchored state is read as strictly as the key server reads a
    /// request: the anchor file edited by hand (a member added, one made
    /// null, the digest in capitals) is refused, naming what is wrong;
    /// the file as written opens.
    @Test func anAnchorFileWithAnUnknownMemberIsRefused() throws {
        let folder = try RecordStoreTests.Folder()
        let anchor = FolderStoreAnchor(folder: folder.path + "/anchors")
        let id = String(repeating: "ab", count: 16)
        let state = Self.state(3, [5, 2])
        try anchor.publish(state, store: id)
        #expect(try anchor.anchoredState(store: id) == state)
        let path = folder.path + "/anchors/" + id + ".json"
        let written = try String(contentsOfFile: path, encoding: .utf8)
        #expect(written.hasPrefix("{\"digest\""))
        func refusal(_ text: String) -> String? {
            try? text.write(toFile: path, atomically: true, encoding: .utf8)
            do {
                _ = try anchor.anchoredState(store: id)
                return nil
            } catch let error as CofferError {
                #expect(error.code == .malformed)
                return error.description
            } catch { return "\(error)" }
        }
        let added = refusal(written.replacingOccurrences(of: "{\"digest\"", with: "{\"sequence\":[1],\"digest\""))
        #expect(added?.contains("\"sequence\"") == true)
        #expect(refusal(written.replacingOccurrences(of: "\"epoch\":3", with: "\"epoch\":null")) != nil)
        #expect(
            refusal(
                written.replacingOccurrences(
                    of: String(repeating: "a", count: 64), with: String(repeating: "A", count: 64))) != nil)
        #expect(refusal("[]") != nil)
        #expect(refusal(written) == nil)
    }

    /// The store's digest rows saved and put back with the rows of that
    /// moment (GRDB beside the store, as a database writer would):
    /// consistent with itself, so `verify` passes, but behind the anchor.
    @Test(arguments: ["keychain", "folder"]) func aRollbackOfRowsAndDigestIsCaughtByTheAnchor(_ kind: String) throws {
        let folder = try RecordStoreTests.Folder()
        let anchor: any StoreAnchor =
            kind == "keychain"
            ? KeychainStoreAnchor(keychain: InMemoryKeychain()) : FolderStoreAnchor(folder: folder.path + "/anchors")
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast, rollbackGuard: nil)
        try store.keepAnchored(at: anchor, policy: StoreAnchorPolicy(interval: 0, commits: 1))
        for number in 0..<3 { try store.put(StoreRecordSetTests.present(number, from: 1), into: "presents") }
        #expect(try anchor.anchoredState(store: store.storeID) == store.anchorState())
        let saved = try DatabaseQueue(path: folder.database).read { db in
            try Row.fetchAll(db, sql: "SELECT tbl, shard, state FROM coffer_record_set")
        }
        let added = try store.put(StoreRecordSetTests.present(3, from: 1), into: "presents")
        let writer = try DatabaseQueue(path: folder.database)
        try writer.write { db in
            try db.execute(sql: "DELETE FROM presents WHERE id = ?", arguments: [added.integerValue!])
            for row in saved {
                try db.execute(
                    sql: "UPDATE coffer_record_set SET state = ? WHERE tbl = ? AND shard = ?",
                    arguments: [row["state"] as Data, row["tbl"] as String, row["shard"] as Int])
            }
        }
        try writer.close()
        let unanchored = try RecordStore.open(
            sqlite: folder.database, secret: RecordStoreTests.passphrase, rollbackGuard: nil)
        #expect(try unanchored.verify().isIntact, "rows and digest agree: only the anchor can tell")
        try unanchored.close()
        // The read that runs the check still answers; every call after it is refused.
        _ = try store.get("presents", id: .integer(1))
        let refused = #expect(throws: CofferError.self) { _ = try store.get("presents", id: .integer(1)) }
        #expect(refused?.code == .rolledBack)
        // A fresh handle is refused before it reads anything.
        let fresh = try RecordStore.open(
            sqlite: folder.database, secret: RecordStoreTests.passphrase, rollbackGuard: nil)
        defer { try? fresh.close() }
        let atOpen = #expect(throws: CofferError.self) { try fresh.keepAnchored(at: anchor) }
        #expect(atOpen?.code == .rolledBack)
        #expect("\(atOpen!)".contains("older than the state anchored"))
    }

    /// An anchor that cannot be reached does not stop the writes; each
    /// publication tries again, and `close` reports the last failure.
    @Test func anAnchorOutOfReachIsTriedAgainAndReportedAtClose() throws {
        final class Flaky: StoreAnchor, @unchecked Sendable {  // `reachable` is set by the test only between calls
            let inner = KeychainStoreAnchor(keychain: InMemoryKeychain())
            var reachable = true
            var location: String { "a flaky anchor" }
            func anchoredState(store: String) throws -> StoreAnchorState? {
                guard reachable else { throw CofferError(.io, "unreachable") }
                return try inner.anchoredState(store: store)
            }
            func publish(_ state: StoreAnchorState, store: String) throws -> StoreAnchorState {
                guard reachable else { throw CofferError(.io, "unreachable") }
                return try inner.publish(state, store: store)
            }
            func accept(_ state: StoreAnchorState, store: String) throws { try inner.accept(state, store: store) }
        }
        let folder = try RecordStoreTests.Folder()
        let anchor = Flaky()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try RecordStoreTests.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast, rollbackGuard: nil)
        try store.keepAnchored(at: anchor, policy: StoreAnchorPolicy(interval: 3600, commits: 1))
        anchor.reachable = false
        try store.put(StoreRecordSetTests.present(0, from: 2), into: "presents")
        anchor.reachable = true
        try store.put(StoreRecordSetTests.present(1, from: 2), into: "presents")
        #expect(try anchor.anchoredState(store: store.storeID) == store.anchorState())
        anchor.reachable = false
        try store.put(StoreRecordSetTests.present(2, from: 2), into: "presents")
        let closing = #expect(throws: CofferError.self) { try store.close() }
        #expect(closing?.code == .io)
    }
}
