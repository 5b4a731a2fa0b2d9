#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// An operator's safety and reads (operator trial 4, frictions 7 and 8):
/// a rotate or shred of a subject the server never held a key for is
/// refused unless told to create, a shred can be tried dry, and the
/// subjects and their keys' versions can be read with a scope of their
/// own, never a key.
@Suite struct SubjectReadsTests {
    @Test(arguments: Backend.allCases) func unknownSubjectsDryRunsAndReads(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: backend)
        let admin = try await server.store.addOperator(name: "ops", scopes: OperatorScope.all)
        let reader = try await server.store.addOperator(name: "reader", scopes: [.read])
        let rotator = try await server.store.addOperator(name: "rotator", scopes: [.rotate])
        let alice = try issuer.token("alice")
        try await server.run { client in
            let post = { (route: String, payload: [String: Any]) async throws -> TestResponse in
                try await client.execute(
                    uri: "/v1/admin/\(route)", method: .post, headers: bearer(admin), body: try body(payload))
            }
            let get = { (uri: String, token: String) async throws -> TestResponse in
                try await client.execute(uri: uri, method: .get, headers: bearer(token))
            }
            #expect(
                try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(alice)).status == .ok)

            // A typo makes nothing: no key, no tombstone.
            try expectProblem(
                try await post("keys/rotate", ["subject": "alcie", "purpose": "notes"]), .notFound, "subject-unknown")
            try expectProblem(
                try await post("subjects/shred", ["subject": "alcie", "undoWindowSeconds": 0]), .notFound,
                "subject-unknown")
            try expectProblem(
                try await post("subjects/shred", ["subject": "alcie", "dryRun": true]), .notFound, "subject-unknown")
            #expect(try server.count("SELECT count(*) FROM keys WHERE subject = 'alcie'") == 0)
            #expect(try server.count("SELECT count(*) FROM subjects WHERE subject = 'alcie'") == 0)
            // Said on purpose, it is made.
            let made = try await post("keys/rotate", ["subject": "bob", "purpose": "photos", "create": true])
            #expect(made.status == .ok)
            #expect(try json(made)["version"] as? Int == 1)
            #expect(try await post("keys/rotate", ["subject": "alice", "purpose": "notes"]).status == .ok)
            try expectProblem(
                try await post("keys/rotate", ["subject": "alice", "purpose": "notes", "create": "yes"]), .badRequest,
                "body-malformed")

            // A dry run says what a shred would destroy, and changes nothing.
            let dry = try await post("subjects/shred", ["subject": "alice", "undoWindowSeconds": 60, "dryRun": true])
            #expect(dry.status == .ok)
            let preview = try json(dry)
            #expect(preview["dryRun"] as? Bool == true && preview["storedVersions"] as? Int == 2, "\(preview)")
            #expect(try server.count("SELECT count(*) FROM subjects WHERE subject = 'alice'") == 0)
            #expect(
                try await client.execute(uri: "/v1/keys/notes", method: .post, headers: bearer(alice)).status == .ok)

            // The reads: a subject's keys, never their bytes, with the read scope only.
            var held = try await get("/v1/admin/keys?subject=alice", reader)
            #expect(held.status == .ok)
            var keys = try json(held)
            let list = keys["keys"] as? [[String: Any]] ?? []
            #expect(list.count == 1 && keys["shredded"] as? Bool == false && keys["shredAt"] == nil, "\(keys)")
            #expect(list.first?["purpose"] as? String == "notes" && list.first?["current"] as? Int == 2)
            #expect(list.first?["minimum"] as? Int == 1 && list.first?["versions"] as? Int == 2)
            #expect(!String(buffer: held.body).contains("\"key\""))
            try expectProblem(try await get("/v1/admin/keys?subject=alice", rotator), .forbidden, "scope-missing")
            try expectProblem(try await get("/v1/admin/keys", reader), .badRequest, "bad-request")
            try expectProblem(
                try await get("/v1/admin/keys?subject=alice&subjcet=bob", reader), .badRequest, "bad-request")
            try expectProblem(
                try await get("/v1/admin/keys?subject=alice", alice), .unauthorized, "operator-token-invalid")
            let unknown = try json(try await get("/v1/admin/keys?subject=nobody%7Cx", reader))
            #expect(unknown["subject"] as? String == "nobody|x" && (unknown["keys"] as? [Any])?.isEmpty == true)

            // After a shred is asked for, the read shows it pending.
            #expect(try await post("subjects/shred", ["subject": "alice", "undoWindowSeconds": 60]).status == .ok)
            held = try await get("/v1/admin/keys?subject=alice", reader)
            keys = try json(held)
            #expect(keys["shredAt"] as? String != nil && keys["shredded"] as? Bool == false, "\(keys)")
            // A subject never seen can be shredded on purpose.
            #expect(
                try await post("subjects/shred", ["subject": "carol", "undoWindowSeconds": 0, "create": true]).status
                    == .ok)

            // The subjects, a page at a time.
            var page = try json(try await get("/v1/admin/subjects", reader))
            #expect(page["subjects"] as? [String] == ["alice", "bob", "carol"] && page["next"] == nil, "\(page)")
            page = try json(try await get("/v1/admin/subjects?limit=2", reader))
            #expect(page["subjects"] as? [String] == ["alice", "bob"] && page["next"] as? String == "bob", "\(page)")
            page = try json(try await get("/v1/admin/subjects?after=bob&limit=2", reader))
            #expect(page["subjects"] as? [String] == ["carol"] && page["next"] == nil, "\(page)")
            for bad in ["limit=0", "limit=1001", "limit=x", "limt=5", "limit=2&limit=3", "after=a&subject=b"] {
                try expectProblem(try await get("/v1/admin/subjects?\(bad)", reader), .badRequest, "bad-request")
            }
        }
    }

    /// The same through `coffer server-key` against a running coffer-server.
    @Test func theCommandLineRefusesTyposTriesDryAndReads() throws {
        let issuer = try Issuer()
        let (server, operatorFile, tokenFile) = try ServerKeyCLITests.serverWithOperator(issuer, subject: "dana")
        defer { server.stop() }
        let access = ["--server", server.url, "--operator-token-file", operatorFile]
        let run = { (arguments: [String]) throws -> (Int32, String, String) in
            try ServerKeyCLITests.run(["server-key"] + arguments + access)
        }
        var (status, out, err) = try ServerKeyCLITests.run(
            ["server-key", "get", "--purpose", "notes", "--server", server.url, "--token-file", tokenFile])
        #expect(status == 0, "\(err)")

        (status, _, err) = try run(["rotate", "--subject", "dnaa", "--purpose", "notes"])
        #expect(status == 1 && err.contains("subject-unknown"), "\(status) \(err)")
        (status, out, err) = try run(["rotate", "--subject", "erin", "--purpose", "notes", "--create"])
        #expect(status == 0 && out.hasPrefix("purpose notes, version 1"), "\(err)")
        (status, _, err) = try run(["shred", "--subject", "dnaa", "--undo-window", "0"])
        #expect(status == 1 && err.contains("subject-unknown"), "\(status) \(err)")
        (status, out, err) = try run(["shred", "--subject", "dana", "--dry-run", "--undo-window", "0"])
        #expect(status == 0 && out.hasPrefix("dry run: would shred 1 stored key version of dana at "), "\(out) \(err)")
        (status, out, err) = try run(["retire", "--subject", "dana", "--purpose", "notes", "--minimum-version", "1"])
        #expect(status == 0 && err.contains("of notes for dana are retired"), "\(err)")

        (status, out, err) = try run(["show", "--subject", "dana"])
        #expect(status == 0 && out == "notes: version 1 current, 1 minimum, 1 stored\n", "\(out) \(err)")
        (status, out, err) = try run(["show", "--subject", "dana", "--json"])
        let shown = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any]
        #expect(status == 0 && shown?["subject"] as? String == "dana" && shown?["shredded"] as? Bool == false, "\(out)")
        (status, out, _) = try run(["show", "--subject", "nobody"])
        #expect(status == 0 && out == "nobody: no keys\n")
        (status, out, err) = try run(["subjects"])
        #expect(status == 0 && out == "dana\nerin\n", "\(out) \(err)")
        (status, out, err) = try run(["subjects", "--limit", "1"])
        #expect(status == 0 && out == "dana\n", "\(out) \(err)")
        (status, out, err) = try run(["subjects", "--after", "dana"])
        #expect(status == 0 && out == "erin\n", "\(out) \(err)")
        (status, _, _) = try run(["subjects", "--limit", "0"])
        #expect(status == 64)
    }
}
#endif
