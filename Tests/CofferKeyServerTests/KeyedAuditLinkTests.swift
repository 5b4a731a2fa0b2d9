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

    /// A database from before keyed links (made here by relinking every
    /// entry with SHA-256, with scripts/audit-relink.py, and removing the
    /// link key and the anchors, as such a server left them): it verifies
    /// as it is, and a server of this version goes on from it with keyed
    /// links under a new link key.
    @Test(arguments: Backend.allCases) func aChainFromBeforeKeyedLinksGoesOnKeyed(_ backend: Backend) async throws {
        let kek = KeyRing()
        let (server, _) = try await AuditTests.busyServer(backend, kek: kek)
        let postgres = backend == .postgres
        let query = { (sql: String) throws -> String in
            postgres
                ? try TestPostgres.value(server.database, sql)
                : try Spawned.run("/usr/bin/sqlite3", [server.database, sql]).text
                    .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let columns =
            "'seq',seq,'at',at,'actor',actor,'action',action,'realm',realm,'subject',subject,"
            + "'device',device,'purpose',purpose,'version',version,'detail',detail,"
            + (postgres ? "'hash',encode(hash,'hex')" : "'hash',hex(hash)")
        let chain = try query(
            postgres
                ? "SELECT json_build_object(\(columns))::text FROM audit ORDER BY seq"
                : "SELECT json_object(\(columns)) FROM audit ORDER BY seq")
        let relink = try Spawned.run(
            Issuer.root + "/.venv/bin/python",
            [Issuer.root + "/scripts/audit-relink.py", postgres ? "postgres" : "sqlite", "-"], input: Data(chain.utf8))
        #expect(relink.status == 0)
        _ = try query(relink.text)
        _ = try query("DELETE FROM server_secrets WHERE name = 'audit-link-key'")
        #expect(try query("SELECT count(*) FROM audit WHERE length(link) > 0") == "0")

        let upgraded = try await TestServer(issuer: try Issuer(), kek: kek, reopening: server)
        let old = try await upgraded.store.verifyAudit()
        #expect(old.broken == nil && old.checked == 11 && old.keyedFrom == nil)
        _ = try await upgraded.store.addOperator(name: "after", scopes: [.rotate])
        let after = try await upgraded.store.verifyAudit()
        #expect(after.broken == nil && after.checked == 12 && after.keyedFrom == 12)
    }
}
#endif
