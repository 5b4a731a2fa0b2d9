#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The audit log: every release and change is in the chain, with no key
/// in it; a single edited byte or a deleted entry is found at its entry.
@Suite struct AuditTests {
    /// Releases, a rotation, a retirement, a shred and its undo, and
    /// operators made and removed: what the chain then holds.
    static func busyServer(_ backend: Backend, kek: KeyRing = KeyRing()) async throws -> (TestServer, [String]) {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, kek: kek, backend: backend)
        let admin = try await server.store.addOperator(name: "ops", scopes: OperatorScope.all)
        let alice = try issuer.token("alice")
        let keys = Locked([String]())
        try await server.run { client in
            let call = { (uri: String, token: String, payload: [String: Any]?) async throws -> [String: Any] in
                try await client.execute(
                    uri: uri, method: uri.contains("versions") ? .get : .post, headers: bearer(token),
                    body: try payload.map(body)
                ) { response in
                    #expect(response.status.code < 300, "\(uri): \(response.status)")
                    return response.status == .noContent ? [:] : try json(response)
                }
            }
            Self.record(keys, try await call("/v1/keys/notes", alice, nil))
            Self.record(keys, try await call("/v1/keys/notes", alice, nil))
            _ = try await call("/v1/admin/keys/rotate", admin, ["subject": "alice", "purpose": "notes"])
            Self.record(keys, try await call("/v1/keys/notes/versions/2", alice, nil))
            _ = try await call(
                "/v1/admin/keys/retire", admin, ["subject": "alice", "purpose": "notes", "minimumVersion": 2])
            _ = try await call("/v1/admin/subjects/shred", admin, ["subject": "alice", "undoWindowSeconds": 600])
            _ = try await call("/v1/admin/subjects/undo-shred", admin, ["subject": "alice"])
        }
        _ = try await server.store.addOperator(name: "temp", scopes: [.rotate])
        #expect(try await server.store.removeOperator(name: "temp"))
        return (server, keys.withLock { $0 })
    }

    static func record(_ keys: Locked<[String]>, _ answer: [String: Any]) {
        keys.withLock { $0.append(answer["key"] as? String ?? "") }
    }

    @Test(arguments: Backend.allCases) func everyReleaseAndChangeIsInTheChainWithNoKey(_ backend: Backend) async throws
    {
        let (server, keys) = try await Self.busyServer(backend)
        let verifier = try await server.store.verifyAudit()
        #expect(verifier.broken == nil)
        #expect(verifier.checked == 11)
        let history = try await server.store.auditHistory(realm: "default", subject: "alice")
        #expect(
            history.map(\.action) == [
                "create", "release", "release", "rotate", "release", "retire", "shred", "undo-shred",
            ])
        #expect(history.map(\.version) == [1, 1, 1, 2, 2, 2, 0, 0])
        #expect(history[3].actor == "operator:ops" && history[1].actor == "subject:alice")
        #expect(history.map(\.seq) == history.map(\.seq).sorted())
        // No key, in base64 or in bytes, in any field of any entry.
        let all = try await server.store.auditHistory(realm: "", subject: "")
        for entry in history + all {
            let text = [
                entry.actor, entry.action, entry.realm, entry.subject, entry.device, entry.purpose, entry.detail,
            ]
            .joined(separator: "|")
            for key in keys {
                #expect(!text.contains(key))
                let raw = try #require(Data(base64Encoded: key))
                #expect(Data(text.utf8).range(of: raw) == nil)
            }
        }
        #expect(all.map(\.action) == ["operator-add", "operator-add", "operator-remove"])
    }

    /// Each column of a middle entry edited by one byte, one at a time
    /// (and put back): the chain breaks exactly there; a deleted entry
    /// is reported missing.
    @Test(arguments: Backend.allCases) func aSingleEditedByteBreaksTheChainAtItsEntry(_ backend: Backend) async throws {
        let (server, _) = try await Self.busyServer(backend)
        let postgres = backend == .postgres
        let edits: [(String, String)] = [
            ("at", "at + 1"), ("actor", "'X' || substr(actor, 2)"), ("action", "'X' || substr(action, 2)"),
            ("realm", "'X' || substr(realm, 2)"), ("subject", "'X' || substr(subject, 2)"),
            ("device", "'X'"), ("purpose", "'X' || substr(purpose, 2)"), ("version", "version + 1"),
            ("detail", "detail || 'X'"),
            (
                "hash",
                postgres
                    ? "set_byte(hash, 7, get_byte(hash, 7) # 1)"
                    : "FLIP"
            ),
        ]
        for (column, change) in edits {
            let saved = "\(column)_saved"
            try server.execute("ALTER TABLE audit ADD COLUMN \(saved) \(postgres ? "text" : "ANY")")
            try server.execute(
                "UPDATE audit SET \(saved) = \(postgres ? "CAST(\(column) AS text)" : column) WHERE seq = 5")
            try server.execute(change == "FLIP" ? "FLIP(5)" : "UPDATE audit SET \(column) = \(change) WHERE seq = 5")
            let broken = try await server.store.verifyAudit()
            #expect(broken.broken?.seq == 5, "editing \(column)")
            #expect(broken.checked == 4)
            try server.execute(
                "UPDATE audit SET \(column) = \(postgres ? Self.restore(column, saved) : saved) WHERE seq = 5")
            try server.execute("ALTER TABLE audit DROP COLUMN \(saved)")
            #expect(try await server.store.verifyAudit().broken == nil, "restoring \(column)")
        }
        try server.execute("DELETE FROM audit WHERE seq = 6")
        let gap = try await server.store.verifyAudit()
        #expect(gap.broken?.seq == 6 && gap.broken?.reason.contains("missing") == true)
    }

    /// Non-ASCII, empty and long fields chain alike on both backends
    /// (PostgreSQL links its entries in SQL, from the encoding the server
    /// hands it: `coffer_audit_append_keyed`). There, arrays of different
    /// lengths, and a nonce or pads of the wrong size, are refused; the
    /// unkeyed function of earlier versions is gone; and an entry appended
    /// without the link key breaks the chain at that entry.
    @Test(arguments: Backend.allCases) func unusualFieldsChainAlikeAndAMismatchedEncodingIsCaught(
        _ backend: Backend
    ) async throws {
        let server = try await TestServer(issuer: try Issuer(), backend: backend)
        let actor = "zoë 🎁 " + String(repeating: "ж", count: 3000)
        _ = try await server.store.addOperator(name: "n1", scopes: [.rotate], by: actor)
        #expect(try await server.store.removeOperator(name: "n1", by: ""))
        let intact = try await server.store.verifyAudit()
        #expect(intact.broken == nil && intact.checked == 2)
        #expect(try await server.store.auditHistory(realm: "", subject: "").map(\.actor) == [actor, ""])
        guard backend == .postgres else { return }
        let nonce = "'\\x" + String(repeating: "ab", count: 16) + "'::bytea"
        let pad = "'\\x" + String(repeating: "36", count: 64) + "'::bytea"
        let ragged = "SELECT coffer_audit_append_keyed(1, ARRAY['a'], ARRAY['b', 'c'], ARRAY[''], ARRAY[''], ARRAY[''],"
        #expect(throws: CofferError.self) {
            try server.execute(
                ragged + " ARRAY[''], ARRAY[0]::bigint[], ARRAY[''], ARRAY['\\x00']::bytea[], \(nonce), \(pad), \(pad))"
            )
        }
        let one = "SELECT coffer_audit_append_keyed(1, ARRAY['a'], ARRAY['b'], ARRAY[''], ARRAY[''], ARRAY[''],"
        #expect(throws: CofferError.self) {
            try server.execute(
                one + " ARRAY[''], ARRAY[0]::bigint[], ARRAY[''], ARRAY['\\x00']::bytea[], '\\x00', \(pad), \(pad))")
        }
        #expect(throws: CofferError.self) {
            try server.execute(
                one.replacingOccurrences(of: "_keyed", with: "")
                    + " ARRAY[''], ARRAY[0]::bigint[], ARRAY[''], ARRAY['\\x00']::bytea[])")
        }
        // The right lengths, but pads not from the link key (and the
        // encoding of other fields than the row's).
        try server.execute(
            one + " ARRAY[''], ARRAY[0]::bigint[], ARRAY[''], ARRAY['\\x00000001']::bytea[], \(nonce), \(pad), \(pad))")
        let broken = try await server.store.verifyAudit()
        #expect(broken.broken?.seq == 3 && broken.checked == 2)
    }

    static func restore(_ column: String, _ saved: String) -> String {
        switch column {
        case "at", "version": return "CAST(\(saved) AS bigint)"
        case "hash": return "decode(substr(\(saved), 3), 'hex')"
        default: return saved
        }
    }
}
#endif
