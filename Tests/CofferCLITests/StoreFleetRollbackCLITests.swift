import Foundation
import Testing

/// Security review 4, H1: the rollback guard of a store is every
/// process's, not only the one that changed the state. An admin (state
/// folder A) rotates; an app server (state folder B) uses the store at
/// the new epoch; a database writer without a key puts back the state
/// from before the rotation (sqlite3, psql). B's next put — which on
/// 251f1e1 sealed under the retired key — and its next get are refused,
/// with the hint to accept a restore made on purpose.
@Suite(.serialized) struct StoreFleetRollbackCLITests {
    static let line = #"{"name": "Dan", "email": "dan@example.com", "ssn": "444-44-4444"}"#

    /// A second account's state folder, closed to others.
    static func stateFolder(_ directory: TemporaryDirectory, _ name: String) throws -> [String: String] {
        let path = directory.url.appendingPathComponent(name).path
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return ["COFFER_STATE_DIR": path]
    }

    static func refused(_ result: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 3, "\(what): \(result.status) \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains("an older copy of it was put back"), sourceLocation: sourceLocation)
        #expect(result.stderr.contains("coffer store accept-rollback"), sourceLocation: sourceLocation)
    }

    @Test func anAppServerThatSawTheNewEpochRefusesTheOldStateOnSQLite() throws {
        let directory = try StoreTamperCLITests.setUp()
        let b = try Self.stateFolder(directory, "state-b")
        func asB(_ arguments: [String], stdin: String = "") throws -> CLI.Result {
            try CLI.coffer(
                ["store"] + arguments + ["--db", "s.sqlite", "--kek-file", "kek"], stdin: Array(stdin.utf8),
                in: directory.url, environment: b)
        }
        try StoreTamperCLITests.sqlite("CREATE TABLE saved AS SELECT * FROM coffer_meta", directory)
        StoreCLITests.ok(try StoreCLITests.store(["rotate"], directory), "rotate (A)")
        StoreCLITests.ok(try asB(["get", "--table", "people", "--id", "1"]), "get at the new epoch (B)")
        try StoreTamperCLITests.sqlite(
            "DELETE FROM coffer_meta; INSERT INTO coffer_meta SELECT * FROM saved", directory)
        Self.refused(try asB(["put", "--table", "people"], stdin: Self.line), "put (B) on the old state")
        Self.refused(try asB(["get", "--table", "people", "--id", "1"]), "get (B) on the old state")
        #expect(try StoreTamperCLITests.sqlite("SELECT count(*) FROM people", directory) == "2\n")
    }

    #if Server
    @Test(.enabled(if: StorePostgresCLITests.available))
    func anAppServerThatSawTheNewEpochRefusesTheOldStateOnPostgres()
        throws
    {
        let (directory, options) = try StorePostgresCLITests.setUp("cli_fleet", schema: StoreTamperCLITests.schema)
        let b = try Self.stateFolder(directory, "state-b")
        func asB(_ arguments: [String], stdin: String = "") throws -> CLI.Result {
            try CLI.coffer(["store"] + arguments + options, stdin: Array(stdin.utf8), in: directory.url, environment: b)
        }
        func psql(_ sql: String) throws {
            let result = try StorePostgresCLITests.psql("SET search_path TO cli_fleet; " + sql)
            #expect(result.status == 0, "psql failed: \(result.stderr)")
        }
        StoreCLITests.ok(try asB(["put", "--table", "people"], stdin: Self.line), "put (B)")
        try psql("CREATE TABLE saved AS SELECT * FROM coffer_meta")
        StoreCLITests.ok(try StorePostgresCLITests.run(["rotate"], options, directory), "rotate (A)")
        StoreCLITests.ok(try asB(["get", "--table", "people", "--id", "1"]), "get at the new epoch (B)")
        try psql("DELETE FROM coffer_meta; INSERT INTO coffer_meta SELECT * FROM saved")
        Self.refused(try asB(["put", "--table", "people"], stdin: Self.line), "put (B) on the old state")
        Self.refused(try asB(["get", "--table", "people", "--id", "1"]), "get (B) on the old state")
    }
    #endif
}
