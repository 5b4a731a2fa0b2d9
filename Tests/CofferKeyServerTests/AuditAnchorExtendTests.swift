#if Server
import Foundation
import Testing

/// H8 (security review 4): a database writer without the KEK relinks the
/// audit chain with one subject's entries removed and deletes the anchors
/// past the cut (with scripts/audit-relink.py and sqlite3 or psql, never
/// through the server). The server used to anchor the forged head with
/// its own key; now it anchors only a head that extends its last anchor,
/// and says so in its log and in /metrics when it will not. And since the
/// links are keyed (docs/key-server-audit.md, "Keyed links"), the writer
/// can only relink with SHA-256, which `audit verify` refuses at the cut
/// by itself, with no head kept outside the database.
@Suite(.serialized) struct AuditAnchorExtendTests {
    @Test(arguments: Backend.allCases) func theServerRefusesToAnchorARewrittenChain(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let (database, environment) = try backend.serverOptions()
        let checkpoints = issuer.folder + "/checkpoints.log"
        let log = issuer.folder + "/server.log"
        let flags = database + ["--audit-anchor-every", "0.2", "--audit-checkpoint", checkpoints]
        var server = try ServerProcess(issuer: issuer, data: data, log: log, extra: flags, environment: environment)
        defer { server.stop() }
        let tool = ["--data", data, "--kek-passphrase-file", issuer.folder + "/kek-passphrase"] + database
        let scraper = try ServerProcess.addOperator(
            issuer: issuer, data: data, name: "scraper", extra: database + ["--scope", "metrics:read"],
            environment: environment)
        for subject in ["alice", "bob", "alice", "carol"] {
            #expect(try await server.address.request("/v1/keys/notes", token: try issuer.token(subject)).0 == 200)
        }
        let anchored = try await KEKRotationSecretsTests.anchoredHead(tool, environment: environment)
        #expect(anchored >= 7)
        let lastLine = { try String(contentsOfFile: checkpoints, encoding: .utf8).split(separator: "\n").last ?? "" }
        let checkpointBefore = try lastLine()

        // The rewrite, while the server runs.
        let sql = { (query: String) throws -> String in
            backend == .sqlite
                ? try Spawned.run("/usr/bin/sqlite3", [data + "/keys.sqlite", query]).text
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                : try TestPostgres.value(database[1], query)
        }
        let columns =
            "'seq',seq,'at',at,'actor',actor,'action',action,'realm',realm,'subject',subject,"
            + "'device',device,'purpose',purpose,'version',version,'detail',detail,"
            + (backend == .sqlite
                ? "'hash',hex(hash),'link',hex(link)" : "'hash',encode(hash,'hex'),'link',encode(link,'hex')")
        let chain = try sql(
            backend == .sqlite
                ? "SELECT json_object(\(columns)) FROM audit ORDER BY seq"
                : "SELECT json_build_object(\(columns))::text FROM audit ORDER BY seq")
        let relink = try Spawned.run(
            Issuer.root + "/.venv/bin/python",
            [Issuer.root + "/scripts/audit-relink.py", backend == .sqlite ? "sqlite" : "postgres", "alice"],
            input: Data(chain.utf8))
        #expect(relink.status == 0)
        let cut = try chain.split(separator: "\n").compactMap { line -> Int? in
            let entry = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return entry?["subject"] as? String == "alice" ? entry?["seq"] as? Int : nil
        }.min()
        let nonce = try sql("SELECT length(link) FROM audit WHERE seq = \(cut ?? 0)")
        #expect(cut != nil && nonce == "16")
        _ = try sql(relink.text)
        // The entries before the cut are as they were; the first one
        // relinked is refused by its link alone, with no head kept outside.
        let (bare, said) = try await KEKRotationTests.serverTool(["audit", "verify"] + tool, environment: environment)
        #expect(
            bare == 1 && said.contains("audit chain broken at entry \(cut ?? 0): its link is plain SHA-256"),
            "\(said)")
        let anchorsLeft = try sql("SELECT count(*) FROM audit_anchors")

        // New entries after the rewrite: the running server refuses to
        // anchor them, logs why and counts it.
        #expect(try await server.address.request("/v1/keys/notes", token: try issuer.token("dora")).0 == 200)
        try await Self.waitForRefusal(server, token: scraper)
        #expect(try String(contentsOfFile: log, encoding: .utf8).contains("audit anchor refused"))
        #expect(try sql("SELECT count(*) FROM audit_anchors") == anchorsLeft)
        #expect(try lastLine() == checkpointBefore)

        // A server started afterwards reads the checkpoint file's last
        // line, and refuses too; audit verify with that file fails.
        server.stop()
        server = try ServerProcess(issuer: issuer, data: data, log: log, extra: flags, environment: environment)
        try await Self.waitForRefusal(server, token: scraper)
        #expect(try sql("SELECT count(*) FROM audit_anchors") == anchorsLeft)
        #expect(try lastLine() == checkpointBefore)
        let (status, out) = try await KEKRotationTests.serverTool(
            ["audit", "verify", "--checkpoint", checkpoints] + tool, environment: environment)
        #expect(status == 1 && out.contains("audit chain broken at entry \(cut ?? 0)"), "\(out)")
    }

    /// Waits (up to 10 s) for /metrics to count a refused anchor.
    static func waitForRefusal(_ server: ServerProcess, token: String) async throws {
        for _ in 0..<100 {
            let (status, text) = try await server.address.text("/metrics", token: token)
            let refused = text.split(separator: "\n").first { $0.hasPrefix("coffer_audit_anchor_refusals_total ") }
            if status == 200, let refused, refused != "coffer_audit_anchor_refusals_total 0" { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("no refused anchor was counted within 10 s")
    }
}
#endif
