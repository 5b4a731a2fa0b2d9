#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import Testing

/// G4 (security review 3): the server anchors the audit chain's head with
/// a MAC under a key only the KEK opens. A database writer who cuts the
/// tail, or forges an anchor, is caught; one who also deletes the anchors
/// is caught by a head kept outside the database. The database is edited
/// with sqlite3 and psql, never through the server.
@Suite struct AuditAnchorTests {
    @Test(arguments: Backend.allCases) func aCutTailAForgedAnchorAndADeletedOneAreCaught(_ backend: Backend)
        async throws
    {
        let (server, _) = try await AuditTests.busyServer(backend)
        let anchor = try #require(try await server.store.anchorAudit())
        let head = try #require(try await server.store.auditHead())
        #expect(anchor.seq == 11 && anchor.head == head && head.hash.count == 32)
        #expect(try AuditHead(head.description) == head)
        let intact = try await server.store.verifyAudit(expecting: head)
        #expect(intact.broken == nil && intact.anchoredThrough == 11 && intact.head == head)
        // Anchoring again without a new entry stores nothing new.
        try await server.store.anchorAudit()

        let postgres = backend == .postgres
        try server.execute("CREATE TABLE saved_audit AS SELECT * FROM audit WHERE seq > 8")
        try server.execute("DELETE FROM audit WHERE seq > 8")
        let cut = try await server.store.verifyAudit()
        // (The harness's server anchored entry 9 as it stopped; this anchored 11.)
        #expect(
            (cut.broken?.seq ?? 0) > 8 && cut.broken?.reason.contains("ends at entry 8") == true,
            "\(String(describing: cut.broken))")
        try server.execute("INSERT INTO audit SELECT * FROM saved_audit")
        #expect(try await server.store.verifyAudit().broken == nil)

        try server.execute("CREATE TABLE saved_anchors AS SELECT * FROM audit_anchors")
        try server.execute(
            "UPDATE audit_anchors SET mac = \(postgres ? "decode(repeat('00', 32), 'hex')" : "zeroblob(32)")")
        let forged = try await server.store.verifyAudit()
        #expect((forged.broken?.seq ?? 0) > 8 && forged.broken?.reason.contains("server's key") == true)

        // The anchors deleted with the tail: the chain alone looks whole,
        // the head kept outside does not.
        try server.execute("DELETE FROM audit_anchors; DELETE FROM audit WHERE seq > 8")
        let bare = try await server.store.verifyAudit()
        #expect(bare.broken == nil && bare.anchoredThrough == 0 && bare.checked == 8)
        let kept = try await server.store.verifyAudit(expecting: head)
        #expect(kept.broken?.seq == 11 && kept.broken?.reason.contains("--expect-head") == true)
        // A head from another chain: the same number, another hash.
        try server.execute("INSERT INTO audit SELECT * FROM saved_audit")
        let other = AuditHead(seq: 5, hash: Data(repeating: 7, count: 32))
        let wrong = try await server.store.verifyAudit(expecting: other)
        #expect(wrong.broken?.seq == 5 && wrong.broken?.reason.contains("rewritten") == true)
    }

    @Test func headsAreReadStrictly() {
        for bad in [
            "", "5", "5:", ":ab", "0:" + String(repeating: "a", count: 64), "5:" + String(repeating: "g", count: 64),
            "5:" + String(repeating: "a", count: 62), "-1:" + String(repeating: "a", count: 64),
        ] {
            #expect(throws: CofferError.self, "\(bad)") { try AuditHead(bad) }
        }
    }
}

/// The review's own reproduction on `coffer-server` as built: the SQLite
/// file rewritten with Python's sqlite3 (every entry about one subject
/// removed and the rest relinked with SHA-256, or the tail cut), then
/// `audit verify`.
@Suite struct AuditAnchorCLITests {
    static let repro = Issuer.root + "/../shared/reviews/repro/g4_audit_rewrite.py"

    @Test func theReviewsRewritesFailVerification() async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let checkpoints = issuer.folder + "/checkpoints.log"
        let server = try ServerProcess(
            issuer: issuer, data: data, extra: ["--audit-anchor-every", "0.2", "--audit-checkpoint", checkpoints])
        for subject in ["alice", "bob", "alice", "carol"] {
            let (status, _) = try await server.address.request("/v1/keys/notes", token: try issuer.token(subject))
            #expect(status == 200)
        }
        try await Task.sleep(for: .milliseconds(600))
        server.stop()
        let tool = ["--data", data, "--kek-passphrase-file", try ServerProcess.passphraseFile(issuer)]
        let (headStatus, headOut) = try await KEKRotationTests.serverTool(["audit", "head"] + tool)
        let head = headOut.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(headStatus == 0 && head.hasPrefix("7:"), "\(headOut)")
        let lines = try String(contentsOfFile: checkpoints, encoding: .utf8).split(separator: "\n")
        #expect(lines.last?.hasPrefix("coffer-audit-checkpoint head=\(head) ") == true, "\(lines)")
        var (status, out) = try await KEKRotationTests.serverTool(["audit", "verify"] + tool)
        #expect(status == 0 && out.contains("7 entries, head \(head), anchored through entry 7"), "\(out)")

        for (edit, alsoAnchors) in [(["drop-subject", "alice"], false), (["truncate", "2"], false)]
            + [(["drop-subject", "alice"], true)]
        {
            let copy = issuer.folder + "/copy-\(UUID().uuidString)"
            try FileManager.default.copyItem(atPath: data, toPath: copy)
            let copied = ["--data", copy] + tool.dropFirst(2)
            try Self.python([Self.repro, copy + "/keys.sqlite"] + edit)
            if alsoAnchors { try Self.python(["-c", Self.dropAnchors, copy + "/keys.sqlite"]) }
            (status, out) = try await KEKRotationTests.serverTool(["audit", "verify"] + copied)
            if alsoAnchors {
                // The chain alone verifies; the head kept outside does not.
                #expect(status == 0 && out.contains("no anchor yet"), "\(out)")
                (status, out) = try await KEKRotationTests.serverTool(
                    ["audit", "verify", "--expect-head", head] + copied)
            }
            #expect(status == 1 && out.hasPrefix("audit chain broken at entry "), "\(edit): \(out)")
        }
    }

    static let dropAnchors =
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('DELETE FROM audit_anchors'); c.commit()"

    static func python(_ arguments: [String]) throws {
        let run = try Spawned.run("/usr/bin/env", ["python3"] + arguments, output: .discard)
        #expect(run.status == 0, "python3 \(arguments)")
    }
}
#endif
