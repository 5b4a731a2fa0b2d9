#if Server
import Coffer
import CofferKeyServerCore
import Foundation
import Testing

/// Keyed links (docs/key-server-audit.md, "Keyed links"; issue 56, part 5):
/// each append links its entries under a key derived from the link key
/// the KEK seals and a nonce stored in each entry. A database writer
/// without the KEK, editing with psql or Python's sqlite3: a nonce moved
/// from another append's entry, a nonce removed (a link passed off as one
/// made before links were keyed), and the sealed link key deleted are each
/// caught at the entry they touch; put back, the chain verifies again.
@Suite struct KeyedAuditLinkTests {
    @Test(arguments: Backend.allCases) func aWriterWithoutTheKEKCannotMoveOrDropALinksKey(_ backend: Backend)
        async throws
    {
        let (server, _) = try await AuditTests.busyServer(backend)
        let intact = try await server.store.verifyAudit()
        #expect(intact.broken == nil && intact.checked == 11 && intact.keyedFrom == 1)
        let entries =
            try await server.store.auditHistory(realm: "", subject: "")
            + (try await server.store.auditHistory(realm: "default", subject: "alice"))
        let nonces = entries.sorted { $0.seq < $1.seq }.map(\.link)
        #expect(nonces.count == 11 && nonces.allSatisfy { $0.count == 16 })
        // Entries 2 and 3 (a first use: its create and its release) are one
        // append and share a nonce; the other appends each have their own.
        #expect(nonces[1] == nonces[2] && Set(nonces).count == 10)

        let postgres = backend == .postgres
        try server.execute("CREATE TABLE saved_links AS SELECT seq, link FROM audit")
        let putBack = "UPDATE audit SET link = (SELECT s.link FROM saved_links s WHERE s.seq = audit.seq)"

        // Entry 6 given entry 5's nonce: its batch key changes, its hash no longer follows.
        try server.execute("UPDATE audit SET link = (SELECT s.link FROM saved_links s WHERE s.seq = 5) WHERE seq = 6")
        var broken = try await server.store.verifyAudit()
        #expect(broken.broken?.seq == 6 && broken.broken?.reason.contains("does not follow") == true)
        #expect(broken.checked == 5)
        try server.execute(putBack)
        #expect(try await server.store.verifyAudit().broken == nil)

        // The last entry's nonce removed: a plain link after keyed ones.
        try server.execute("UPDATE audit SET link = \(postgres ? "''::bytea" : "x''") WHERE seq = 11")
        broken = try await server.store.verifyAudit()
        #expect(broken.broken?.seq == 11 && broken.broken?.reason.contains("plain SHA-256") == true)
        try server.execute(putBack)

        // The sealed link key deleted: no keyed entry can be checked.
        try server.execute("CREATE TABLE saved_secret AS SELECT * FROM server_secrets WHERE name = 'audit-link-key'")
        try server.execute("DELETE FROM server_secrets WHERE name = 'audit-link-key'")
        broken = try await server.store.verifyAudit()
        #expect(broken.broken?.seq == 1 && broken.broken?.reason.contains("holds no link key") == true)
        try server.execute("INSERT INTO server_secrets SELECT * FROM saved_secret")
        let restored = try await server.store.verifyAudit()
        #expect(restored.broken == nil && restored.checked == 11)
    }
}
#endif
