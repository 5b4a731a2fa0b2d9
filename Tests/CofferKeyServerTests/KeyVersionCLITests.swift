#if Server
import Coffer
import Foundation
import Testing

/// G12 (security review 3): rotating the server's key never locks out a
/// store or a key ring unlocked with `--kek-server`; the older version
/// opens them until it is retired; a store moves to the current one as it
/// opens (issue 55), a key ring on request. As the review ran it: `coffer` and `coffer-server` as built.
@Suite struct KeyVersionCLITests {
    @Test func aRotationNeverLocksDataOut() async throws {
        let issuer = try Issuer()
        let (server, operatorFile, tokenFile) = try ServerKeyCLITests.serverWithOperator(issuer, subject: "alice")
        defer { server.stop() }
        let admin = ["--server", server.url, "--operator-token-file", operatorFile, "--subject", "alice"]
        func kek(_ purpose: String) -> [String] {
            ["--kek-server", server.url, "--purpose", purpose, "--token-file", tokenFile]
        }
        let schema = issuer.folder + "/schema.json"
        try Data(
            #"{"tables":[{"name":"t","primaryKey":"id","fields":[{"name":"id","type":"integer"},{"name":"s","type":"text","sealed":true}]}]}"#
                .utf8
        ).write(to: URL(fileURLWithPath: schema))
        let db = ["--db", issuer.folder + "/s.sqlite"]
        var (status, out, err) = try ServerKeyCLITests.run(["store", "init", "--schema", schema] + db + kek("store"))
        #expect(status == 0, "\(err)")
        let put = try Self.put(db + kek("store"), #"{"s": "hello"}"#)
        #expect(put.0 == 0, "\(put.1)")
        let ring = ["--keyring", issuer.folder + "/app.ckr"]
        (status, _, err) = try ServerKeyCLITests.run(["keyring", "new"] + ring + kek("rings"))
        #expect(status == 0, "\(err)")

        for purpose in ["store", "rings"] {
            (status, out, err) = try ServerKeyCLITests.run(["server-key", "rotate", "--purpose", purpose] + admin)
            #expect(status == 0 && out.contains("version 2"), "\(err)")
        }
        // Named explicitly, version 1 opens the store as it is: no note, no move.
        (status, out, err) = try ServerKeyCLITests.run(
            ["store", "get", "--table", "t", "--id", "1", "--kek-version", "1"] + db + kek("store"))
        #expect(status == 0 && out.contains("hello") && !err.contains("note"), "\(err)")
        // Unnamed, the current version is tried, then version 1, which opens
        // the store and moves it to version 2 (its slot rewrapped).
        (status, out, err) = try ServerKeyCLITests.run(
            ["store", "get", "--table", "t", "--id", "1"] + db + kek("store"))
        #expect(status == 0 && out.contains("hello"), "\(status) \(err)")
        #expect(err.contains("opened with version 1") && err.contains("moved to version 2"), "\(err)")
        (status, _, _) = try ServerKeyCLITests.run(
            ["store", "get", "--table", "t", "--id", "1", "--kek-version", "1"] + db + kek("store"))
        #expect(status == 2)
        (status, out, err) = try ServerKeyCLITests.run(
            ["store", "get", "--table", "t", "--id", "1", "--kek-version", "2"] + db + kek("store"))
        #expect(status == 0 && out.contains("hello"), "\(err)")
        // A key ring is moved on request only; until then version 1 opens it, and says so.
        (status, _, err) = try ServerKeyCLITests.run(["keyring", "list"] + ring + kek("rings"))
        #expect(status == 0 && err.contains("opened with version 1") && err.contains("current one is 2"), "\(err)")

        // The key ring moves to version 2; then version 1 may be retired.
        (status, _, err) = try ServerKeyCLITests.run(["keyring", "passwd", "--new-kek-server"] + ring + kek("rings"))
        #expect(status == 0, "\(err)")
        for purpose in ["store", "rings"] {
            (status, _, err) = try ServerKeyCLITests.run(
                ["server-key", "retire", "--purpose", purpose, "--minimum-version", "2"] + admin)
            #expect(status == 0, "\(err)")
        }
        (status, _, err) = try ServerKeyCLITests.run(["keyring", "list"] + ring + kek("rings"))
        #expect(status == 0 && !err.contains("note"), "\(err)")
        // The store moved before the retirement: it opens with version 2, and its record with it.
        (status, out, err) = try ServerKeyCLITests.run(
            ["store", "get", "--table", "t", "--id", "1"] + db + kek("store"))
        #expect(status == 0 && out.contains("hello") && !err.contains("note"), "\(status) \(err)")
        // A second rotation, retired at once: what the store was never moved to is lost, and the error says why.
        (status, _, err) = try ServerKeyCLITests.run(["server-key", "rotate", "--purpose", "store"] + admin)
        #expect(status == 0, "\(err)")
        (status, _, err) = try ServerKeyCLITests.run(
            ["server-key", "retire", "--purpose", "store", "--minimum-version", "3"] + admin)
        #expect(status == 0, "\(err)")
        (status, _, err) = try ServerKeyCLITests.run(["store", "get", "--table", "t", "--id", "1"] + db + kek("store"))
        #expect(status == 2 && err.contains("retired"), "\(err)")
    }

    static func put(_ options: [String], _ line: String) throws -> (Int32, String) {
        let run = try Spawned.run(
            ServerKeyCLITests.coffer.path, ["store", "put", "--table", "t"] + options, input: Data(line.utf8),
            output: .discard, errors: .capture)
        return (run.status, run.errorText)
    }
}
#endif
