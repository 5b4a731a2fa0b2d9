import Foundation
import Testing

/// Security review 4, H2: an update gives the record a new life, and every
/// sealed cell is sealed again under it, so a cell of the record's earlier
/// version put back beside its newer fields (with sqlite3 or psql, never
/// through Coffer) no longer opens — with or without the old life put
/// back too. On 251f1e1 the spliced cell opened and `verify` passed.
@Suite(.serialized) struct StoreSpliceCLITests {
    static let changeEmail = #"{"email": "ann@new.example.com", "ssn": "999-99-9999"}"#

    static func refused(_ result: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 3, "\(what): \(result.status) \(result.stderr)", sourceLocation: sourceLocation)
        #expect(
            !result.stdoutText.contains("111-11-1111"), "\(what) printed the old SSN", sourceLocation: sourceLocation)
    }

    @Test func anOldCellBesideNewerFieldsNeverOpensOnSQLite() throws {
        let directory = try StoreTamperCLITests.setUp()
        func sql(_ text: String) throws { try StoreTamperCLITests.sqlite(text, directory) }
        try sql("CREATE TABLE old AS SELECT * FROM people WHERE id = 1")
        let update = try StoreCLITests.store(
            ["update", "--table", "people", "--id", "1"], directory, stdin: Array(Self.changeEmail.utf8))
        StoreCLITests.ok(update, "update")
        #expect(
            try StoreTamperCLITests.sqlite(
                "SELECT count(*) FROM people p, old o WHERE p.id = 1 AND p.coffer_life = o.coffer_life", directory)
                == "0\n")
        try sql("UPDATE people SET ssn = (SELECT ssn FROM old) WHERE id = 1")
        Self.refused(try StoreCLITests.store(["get", "--table", "people", "--id", "1"], directory), "get")
        Self.refused(try StoreCLITests.store(["verify"], directory), "verify")
        try sql("UPDATE people SET coffer_life = (SELECT coffer_life FROM old) WHERE id = 1")
        Self.refused(
            try StoreCLITests.store(["get", "--table", "people", "--id", "1"], directory), "get, old life too")
        Self.refused(try StoreCLITests.store(["verify"], directory), "verify, old life too")
    }

    #if Server
    @Test(.enabled(if: StorePostgresCLITests.available)) func anOldCellBesideNewerFieldsNeverOpensOnPostgres() throws {
        let (directory, options) = try StorePostgresCLITests.setUp("cli_splice", schema: StoreTamperCLITests.schema)
        func psql(_ sql: String) throws {
            let result = try StorePostgresCLITests.psql("SET search_path TO cli_splice; " + sql)
            #expect(result.status == 0, "psql failed: \(result.stderr)")
        }
        let ann = #"{"name": "Ann", "email": "ann@example.com", "ssn": "111-11-1111"}"#
        StoreCLITests.ok(
            try StorePostgresCLITests.run(["put", "--table", "people"], options, directory, stdin: Array(ann.utf8)),
            "put")
        try psql("CREATE TABLE old AS SELECT * FROM people WHERE id = 1")
        let update = try StorePostgresCLITests.run(
            ["update", "--table", "people", "--id", "1"], options, directory, stdin: Array(Self.changeEmail.utf8))
        StoreCLITests.ok(update, "update")
        try psql("UPDATE people SET ssn = (SELECT ssn FROM old) WHERE id = 1")
        let get = ["get", "--table", "people", "--id", "1"]
        Self.refused(try StorePostgresCLITests.run(get, options, directory), "get")
        Self.refused(try StorePostgresCLITests.run(["verify"], options, directory), "verify")
        try psql("UPDATE people SET coffer_life = (SELECT coffer_life FROM old) WHERE id = 1")
        Self.refused(try StorePostgresCLITests.run(get, options, directory), "get, old life too")
    }
    #endif
}
