import Foundation
import Testing

/// The record set authenticated (issue 57, part 3): a database writer
/// without the keys deletes a record, puts back an older whole row,
/// inserts a row copied from another store, or edits or cuts the digest's
/// own rows — each with sqlite3 or psql, never through Coffer — and
/// `coffer store verify` exits 3 naming the table. On 251f1e1 each of
/// these passed `verify`.
@Suite(.serialized) struct StoreRecordSetCLITests {
    /// What `verify` printed, which must name `table` and say `what`.
    static func caught(
        _ result: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            result.status == 3, "verify after \(what): \(result.status) \(result.stderr)",
            sourceLocation: sourceLocation)
        #expect(
            result.stdoutText.contains("people"), "verify after \(what) names no table: \(result.stdoutText)",
            sourceLocation: sourceLocation)
    }

    static let columns = "id, name, email, email_exact, ssn, coffer_life"

    @Test func aDeletedRecordIsCaughtOnSQLite() throws {
        let directory = try StoreTamperCLITests.setUp()
        StoreCLITests.ok(try StoreCLITests.store(["verify"], directory), "verify before")
        try StoreTamperCLITests.sqlite("DELETE FROM people WHERE id = 2", directory)
        let verify = try StoreCLITests.store(["verify"], directory)
        Self.caught(verify, "a delete")
        #expect(verify.stdoutText.contains("1 record fewer"), "\(verify.stdoutText)")
    }

    @Test func anOlderWholeRowIsCaughtOnSQLite() throws {
        let directory = try StoreTamperCLITests.setUp()
        try StoreTamperCLITests.sqlite("CREATE TABLE old AS SELECT * FROM people WHERE id = 1", directory)
        StoreCLITests.ok(
            try StoreCLITests.store(
                ["update", "--table", "people", "--id", "1"], directory,
                stdin: Array(StoreSpliceCLITests.changeEmail.utf8)), "update")
        try StoreTamperCLITests.sqlite(
            "DELETE FROM people WHERE id = 1; INSERT INTO people (\(Self.columns)) SELECT \(Self.columns) FROM old; DROP TABLE old",
            directory)
        // The old row opens by itself (its cells and life agree): only the set tells.
        StoreCLITests.ok(try StoreCLITests.store(["get", "--table", "people", "--id", "1"], directory), "get")
        let verify = try StoreCLITests.store(["verify"], directory)
        Self.caught(verify, "an older row put back")
        #expect(verify.stdoutText.contains("replaced"), "\(verify.stdoutText)")
    }

    @Test func aRowFromAnotherStoreIsCaughtOnSQLite() throws {
        let directory = try StoreTamperCLITests.setUp()
        let other = try StoreTamperCLITests.setUp()
        try StoreTamperCLITests.sqlite(
            "ATTACH '\(other.url.path)/s.sqlite' AS o; INSERT INTO people (\(Self.columns)) SELECT 3, name, email, email_exact, ssn, coffer_life FROM o.people WHERE id = 1",
            directory)
        let verify = try StoreCLITests.store(["verify"], directory)
        Self.caught(verify, "a row copied in")
        #expect(verify.stdoutText.contains("id=3"), "the copied row is not named: \(verify.stdoutText)")
        #expect(verify.stdoutText.contains("1 row more"), "\(verify.stdoutText)")
    }

    @Test func theDigestsOwnRowsAreAuthenticatedOnSQLite() throws {
        let directory = try StoreTamperCLITests.setUp()
        try StoreTamperCLITests.sqlite(
            "UPDATE coffer_record_set SET state = (SELECT state FROM coffer_record_set WHERE shard = 1) WHERE shard = 0",
            directory)
        Self.caught(try StoreCLITests.store(["verify"], directory), "a shard copied over another")
        // A writer is refused too: it would add to a digest it cannot trust.
        let put = try StoreTamperCLITests.putCat(directory)
        #expect(put.status == 3, "put over an edited digest: \(put.status) \(put.stderr)")
        #expect(put.stderr.contains("record-set digest of people"), "\(put.stderr)")

        let cut = try StoreTamperCLITests.setUp()
        try StoreTamperCLITests.sqlite("DELETE FROM coffer_record_set WHERE shard = 5", cut)
        let verify = try StoreCLITests.store(["verify"], cut)
        Self.caught(verify, "a shard removed")
        #expect(verify.stdoutText.contains("15 of its 16 rows"), "\(verify.stdoutText)")
    }

    #if Server
    @Test(.enabled(if: StorePostgresCLITests.available)) func everyTamperIsCaughtOnPostgres() throws {
        let ann = #"{"name": "Ann", "email": "ann@example.com", "ssn": "111-11-1111"}"#
        let bob = #"{"name": "Bob", "email": "bob@example.com", "ssn": "222-22-2222"}"#
        func store(_ name: String) throws -> (TemporaryDirectory, [String]) {
            let (directory, options) = try StorePostgresCLITests.setUp(name, schema: StoreTamperCLITests.schema)
            StoreCLITests.ok(
                try StorePostgresCLITests.run(
                    ["put", "--table", "people"], options, directory, stdin: Array((ann + "\n" + bob + "\n").utf8)),
                "put")
            StoreCLITests.ok(try StorePostgresCLITests.run(["verify"], options, directory), "verify before")
            return (directory, options)
        }
        func psql(_ schema: String, _ sql: String) throws {
            let result = try StorePostgresCLITests.psql("SET search_path TO \(schema); " + sql)
            #expect(result.status == 0, "psql failed: \(result.stderr)")
        }

        let (deleted, deletedOptions) = try store("cli_set_delete")
        try psql("cli_set_delete", "DELETE FROM people WHERE id = 2")
        Self.caught(try StorePostgresCLITests.run(["verify"], deletedOptions, deleted), "a delete")

        let (older, olderOptions) = try store("cli_set_older")
        try psql("cli_set_older", "CREATE TABLE old AS SELECT * FROM people WHERE id = 1")
        StoreCLITests.ok(
            try StorePostgresCLITests.run(
                ["update", "--table", "people", "--id", "1"], olderOptions, older,
                stdin: Array(StoreSpliceCLITests.changeEmail.utf8)), "update")
        try psql(
            "cli_set_older",
            "DELETE FROM people WHERE id = 1; INSERT INTO people (\(Self.columns)) SELECT \(Self.columns) FROM old; DROP TABLE old"
        )
        Self.caught(try StorePostgresCLITests.run(["verify"], olderOptions, older), "an older row put back")

        let (copied, copiedOptions) = try store("cli_set_copied")
        _ = try store("cli_set_source")
        try psql(
            "cli_set_copied",
            "INSERT INTO people (\(Self.columns)) SELECT 3, name, email, email_exact, ssn, coffer_life FROM cli_set_source.people WHERE id = 1"
        )
        let verify = try StorePostgresCLITests.run(["verify"], copiedOptions, copied)
        Self.caught(verify, "a row copied in")
        #expect(verify.stdoutText.contains("id=3"), "the copied row is not named: \(verify.stdoutText)")

        let (edited, editedOptions) = try store("cli_set_digest")
        try psql(
            "cli_set_digest",
            "UPDATE coffer_record_set SET state = (SELECT state FROM coffer_record_set WHERE shard = 1) WHERE shard = 0"
        )
        Self.caught(try StorePostgresCLITests.run(["verify"], editedOptions, edited), "a shard copied over another")
        try psql("cli_set_digest", "DELETE FROM coffer_record_set WHERE shard = 0")
        Self.caught(try StorePostgresCLITests.run(["verify"], editedOptions, edited), "a shard removed")
    }
    #endif
}
