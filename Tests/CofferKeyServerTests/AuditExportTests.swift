#if Server
import Coffer
import Foundation
import GRDB
import Testing

@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// SQLite's log has no index by subject: an export reads the whole log, a
/// span of entries to a read, and finds what the index found.
@Suite struct AuditExportTests {
    @Test(.timeLimit(.minutes(1))) func anExportReadsTheWholeLogInSpans() async throws {
        let (server, _) = try await AuditTests.busyServer(.sqlite)
        let rows = try #require(server.store.rows as? SQLiteKeyRows)
        let indexes = try await rows.pool.read { db in try db.indexes(on: "audit").map(\.name) }
        #expect(indexes.isEmpty, "the log still has \(indexes)")
        let all = try await rows.auditEntries(after: 0, limit: 1000)
        #expect(all.count == 11)
        let alice = all.filter { $0.realm == "default" && $0.subject == "alice" }
        #expect(alice.count == 8)
        for span in [1, 2, 3, 7, 50_000] {
            #expect(try await rows.auditEntries(realm: "default", subject: "alice", span: span) == alice)
        }
        #expect(try await rows.auditEntries(realm: "default", subject: "nobody", span: 2).isEmpty)
        // A database writer moves alice's last entry far ahead: an export
        // still ends, after as many reads as there are spans of entries.
        let far: Int64 = 1 << 62
        try server.execute(
            "UPDATE audit SET seq = \(far) WHERE seq = (SELECT max(seq) FROM audit WHERE subject = 'alice')")
        let moved = try await rows.auditEntries(realm: "default", subject: "alice", span: 2)
        #expect(moved.map(\.seq) == alice.dropLast().map(\.seq) + [far])
    }
}
#endif
