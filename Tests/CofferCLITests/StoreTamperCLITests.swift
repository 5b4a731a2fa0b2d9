import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A store under someone who can write its database but holds no key
/// (security review 3, G1, G9, G13, G14): every change is made with the
/// `sqlite3` command-line tool, never through Coffer.
@Suite(.serialized) struct StoreTamperCLITests {
    static let schema = """
        {"tables": [{"name": "people", "primaryKey": "id",
          "fields": [{"name": "id", "type": "integer"},
                     {"name": "name", "type": "text"},
                     {"name": "email", "type": "text", "sealed": true,
                      "indexes": [{"name": "email_exact", "transforms": ["trim", "lowercase"], "bits": 8}]},
                     {"name": "ssn", "type": "text", "sealed": true, "bind": ["name"]}]}]}
        """

    static func setUp() throws -> TemporaryDirectory {
        let directory = try StoreCLITests.setUp(schema: schema)
        let put = try StoreCLITests.store(
            ["put", "--table", "people"], directory,
            stdin: Array(
                """
                {"name": "Ann", "email": "ann@example.com", "ssn": "111-11-1111"}
                {"name": "Bob", "email": "bob@example.com", "ssn": "222-22-2222"}

                """.utf8))
        StoreCLITests.ok(put, "put")
        return directory
    }

    /// Runs the sqlite3 tool on the store; its output.
    @discardableResult
    static func sqlite(
        _ sql: String, _ directory: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation
    )
        throws -> String
    {
        let tool = Peers.which("sqlite3")
        #expect(tool != nil, "the sqlite3 tool is missing (scripts/test installs it)", sourceLocation: sourceLocation)
        let result = try CLI.run(tool ?? "/usr/bin/sqlite3", ["s.sqlite", sql], in: directory.url)
        #expect(result.status == 0, "sqlite3 failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdoutText
    }

    /// The stored schema's JSON changed with SQLite's own json_set or
    /// json_insert (`edit` is their arguments after the document).
    static func editSchema(_ function: String, _ edit: String, _ directory: TemporaryDirectory) throws {
        try sqlite(
            "UPDATE coffer_meta SET value = CAST(\(function)(CAST(value AS TEXT), \(edit)) AS BLOB) WHERE name = 'schema'",
            directory)
    }

    static func putCat(_ directory: TemporaryDirectory) throws -> CLI.Result {
        try StoreCLITests.store(
            ["put", "--table", "people"], directory,
            stdin: Array(#"{"name": "Cat", "email": "cat@example.com", "ssn": "333-33-3333"}"#.utf8))
    }

    /// G1: a sealed field marked clear in the stored schema. The next put
    /// is refused before it writes anything, with its own exit status and
    /// message; no row holds the SSN in the clear.
    @Test func unsealedFieldInStoredSchemaIsRefused() throws {
        let directory = try Self.setUp()
        try Self.editSchema(
            "json_set", "'$.tables[0].fields[3].sealed', json('false'), '$.tables[0].fields[3].bind', json('[]')",
            directory)
        let edited = try Self.sqlite(
            "SELECT json_extract(CAST(value AS TEXT), '$.tables[0].fields[3].name') || ' ' || json_extract(CAST(value AS TEXT), '$.tables[0].fields[3].sealed') FROM coffer_meta WHERE name = 'schema'",
            directory)
        #expect(edited == "ssn 0\n", "the stored schema was not edited as meant: \(edited)")
        let put = try Self.putCat(directory)
        #expect(put.status == 3, "put after the tamper: \(put.status) \(put.stderr)")
        #expect(put.stderr.contains("changed without the store's keys"))
        #expect(try Self.sqlite("SELECT count(*) FROM people", directory) == "2\n")
        #expect(try Self.sqlite("SELECT count(*) FROM people WHERE typeof(ssn) = 'text'", directory) == "0\n")
        // Reads are refused the same way: nothing of the store is trusted.
        let get = try StoreCLITests.store(["get", "--table", "people", "--id", "1"], directory)
        #expect(get.status == 3)
    }

    /// G1: an index of the attacker's choosing added to the stored schema
    /// (64 bits of first:1), and a bit length raised: both refused.
    @Test func addedOrWidenedIndexIsRefused() throws {
        let directory = try Self.setUp()
        try Self.editSchema("json_set", "'$.tables[0].fields[2].indexes[0].bits', 64", directory)
        #expect(try Self.putCat(directory).status == 3)
        let other = try Self.setUp()
        try Self.editSchema(
            "json_insert",
            #"'$.tables[0].fields[2].indexes[#]', json('{"name":"leak","transforms":["first:1"],"bits":64}')"#, other)
        #expect(try Self.putCat(other).status == 3)
    }

    /// G1: a row added to, or removed from, the state (the job row).
    @Test func addedOrRemovedStateRowIsRefused() throws {
        let directory = try Self.setUp()
        try Self.sqlite("INSERT INTO coffer_meta (name, value) VALUES ('job', x'7b7d')", directory)
        #expect(try Self.putCat(directory).status == 3)
        let other = try Self.setUp()
        try Self.sqlite("DELETE FROM coffer_meta WHERE name = 'index_version'", other)
        #expect(try Self.putCat(other).status != 0)
        let third = try Self.setUp()
        try Self.sqlite("DELETE FROM coffer_meta WHERE name = 'state_seal'", third)
        #expect(try Self.putCat(third).status == 3)
    }

    /// G1: the state put back as it was before a rotation (a copy taken
    /// with sqlite3). The next put is refused as a rollback, with the hint
    /// to accept it; after `accept-rollback` the store works again.
    @Test func stateRolledBackBeforeRotationIsRefused() throws {
        let directory = try Self.setUp()
        try Self.sqlite("CREATE TABLE saved AS SELECT * FROM coffer_meta", directory)
        let keyBefore = try Self.sqlite("SELECT hex(substr(email, 2, 4)) FROM people WHERE id = 1", directory)
        StoreCLITests.ok(try StoreCLITests.store(["rotate"], directory), "rotate")
        #expect(try Self.sqlite("SELECT hex(substr(email, 2, 4)) FROM people WHERE id = 1", directory) != keyBefore)
        try Self.sqlite("DELETE FROM coffer_meta; INSERT INTO coffer_meta SELECT * FROM saved", directory)
        let put = try Self.putCat(directory)
        #expect(put.status == 3, "put on a rolled-back state: \(put.status) \(put.stderr)")
        #expect(put.stderr.contains("an older copy of it was put back"))
        #expect(put.stderr.contains("coffer store accept-rollback"))
        #expect(try Self.sqlite("SELECT count(*) FROM people", directory) == "2\n")
        // Accepted on purpose: the old state verifies, and writes go on (under
        // the key the old state holds as primary).
        StoreCLITests.ok(try StoreCLITests.store(["accept-rollback"], directory), "accept-rollback")
        StoreCLITests.ok(try Self.putCat(directory), "put after accept-rollback")
    }

    /// G9: an id the store gave is never given again after its record is
    /// deleted, so a deleted record's cells never open in a new record.
    @Test func deletedIdsAreNotReused() throws {
        let directory = try Self.setUp()
        let saved = try Self.sqlite("SELECT hex(email) || '|' || hex(ssn) FROM people WHERE id = 2", directory)
        StoreCLITests.ok(
            try StoreCLITests.store(["delete", "--table", "people", "--id", "2"], directory), "delete")
        let put = try Self.putCat(directory)
        StoreCLITests.ok(put, "put")
        #expect(put.stdoutText == "{\"id\":3}\n")
        // The old cells written into the new record do not open there.
        let parts = saved.trimmingCharacters(in: .newlines).split(separator: "|")
        try Self.sqlite("UPDATE people SET email = x'\(parts[0])', ssn = x'\(parts[1])' WHERE id = 3", directory)
        let get = try StoreCLITests.store(["get", "--table", "people", "--id", "3"], directory)
        #expect(get.status == 3, "the old record's cells opened in a new one: \(get.stdoutText)")
    }

    /// G9 with a key the caller gives again: the new record's cells are
    /// bound to a new life, so the deleted record's cells, written into it,
    /// do not open; what is not detected is the old row put back whole
    /// (its cells and its life), which reads as the old record.
    @Test func aReusedKeyStartsANewLife() throws {
        let directory = try Self.setUp()
        let saved = try Self.sqlite(
            "SELECT hex(email) || '|' || hex(ssn) || '|' || hex(coffer_life) FROM people WHERE id = 2", directory)
        StoreCLITests.ok(try StoreCLITests.store(["delete", "--table", "people", "--id", "2"], directory), "delete")
        let again = try StoreCLITests.store(
            ["put", "--table", "people"], directory,
            stdin: Array(#"{"id": 2, "name": "Bob", "email": "new@example.com", "ssn": "999-99-9999"}"#.utf8))
        StoreCLITests.ok(again, "put with the same id")
        let parts = saved.trimmingCharacters(in: .newlines).split(separator: "|")
        try Self.sqlite("UPDATE people SET email = x'\(parts[0])', ssn = x'\(parts[1])' WHERE id = 2", directory)
        let mixed = try StoreCLITests.store(["get", "--table", "people", "--id", "2"], directory)
        #expect(mixed.status == 3 && !mixed.stdoutText.contains("222-22"), "old cells opened: \(mixed.stdoutText)")
        try Self.sqlite("UPDATE people SET coffer_life = x'\(parts[2])' WHERE id = 2", directory)
        let whole = try StoreCLITests.store(["get", "--table", "people", "--id", "2"], directory)
        #expect(whole.stdoutText.contains("222-22-2222"), "the documented limit: a whole old row reads back")
    }

    /// G13: an index wider than 32 bits, or a second index on one field,
    /// only with a written reason.
    @Test func leakyIndexesNeedAReason() throws {
        func initResult(_ schema: String) throws -> CLI.Result {
            let directory = try TemporaryDirectory()
            try directory.write("kek", (0..<32).map { UInt8($0 * 7 & 0xff) })
            try directory.write("schema.json", Array(schema.utf8))
            return try CLI.coffer(
                ["store", "init", "--db", "s.sqlite", "--schema", "schema.json", "--kek-file", "kek"],
                in: directory.url)
        }
        func schema(_ indexes: String) -> String {
            """
            {"tables": [{"name": "t", "primaryKey": "id", "fields": [{"name": "id", "type": "integer"},
              {"name": "hiv", "type": "text", "sealed": true, "indexes": [\(indexes)]}]}]}
            """
        }
        let wide = try initResult(schema(#"{"name": "a", "bits": 64}"#))
        #expect(wide.status == 64)
        #expect(wide.stderr.contains("acceptLeakage"))
        let second = try initResult(
            schema(#"{"name": "a", "bits": 8}, {"name": "b", "bits": 4, "transforms": ["first:1"]}"#))
        #expect(second.status == 64)
        #expect(second.stderr.contains("second index"))
        StoreCLITests.ok(
            try initResult(
                schema(#"{"name": "a", "bits": 64, "acceptLeakage": "a two-row lookup table, no secrets"}"#)),
            "init with a reason")
        StoreCLITests.ok(try initResult(schema(#"{"name": "a", "bits": 32}"#)), "init at 32 bits")
    }

    /// G14: the store file is 0600 (its WAL too), and side tables of
    /// `a_b` with index `c` and of `a` with index `b_c` no longer collide.
    @Test func privateFileAndSideTableNames() throws {
        let directory = try Self.setUp()
        for name in ["s.sqlite", "s.sqlite-wal"] where directory.exists(name) {
            var info = stat()
            #expect(stat(directory.path(name), &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600, "\(name) is \(String(info.st_mode & 0o777, radix: 8))")
        }
        let colliding = """
            {"tables": [
              {"name": "a_b", "primaryKey": "id", "fields": [{"name": "id", "type": "integer"},
                {"name": "x", "type": "text", "sealed": true, "indexes": [{"name": "c", "bits": 8, "tokens": "words"}]}]},
              {"name": "a", "primaryKey": "id", "fields": [{"name": "id", "type": "integer"},
                {"name": "y", "type": "text", "sealed": true, "indexes": [{"name": "b_c", "bits": 8, "tokens": "words"}]}]}]}
            """
        let other = try StoreCLITests.setUp(schema: colliding)
        let tables = try Self.sqlite(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'coffer_tokens_%'", other)
        #expect(tables.split(separator: "\n").count == 2)
        #expect(tables.split(separator: "\n").allSatisfy { $0.utf8.count <= 63 })
    }

    /// The same on PostgreSQL, edited with psql: a sealed field marked
    /// clear, then the state put back from before a rotation, a deleted
    /// record's key, and a deleted record's cells in a new one with its id.
    #if Server
    @Test(.enabled(if: StorePostgresCLITests.available)) func onPostgresWithPsql() throws {
        let (directory, options) = try StorePostgresCLITests.setUp("cli_tamper", schema: Self.schema)
        func put(_ line: String) throws -> CLI.Result {
            try StorePostgresCLITests.run(["put", "--table", "people"], options, directory, stdin: Array(line.utf8))
        }
        func psql(_ sql: String) throws -> String {
            let result = try StorePostgresCLITests.psql("SET search_path TO cli_tamper; " + sql)
            #expect(result.status == 0, "psql failed: \(result.stderr)")
            return result.stdoutText
        }
        StoreCLITests.ok(try put(#"{"name": "Ann", "email": "ann@example.com", "ssn": "111"}"#), "put")
        StoreCLITests.ok(try put(#"{"name": "Bob", "email": "bob@example.com", "ssn": "222"}"#), "put")
        // A deleted record's cells, copied into a new record given its id, do not open.
        _ = try psql("CREATE TABLE old_people AS SELECT * FROM people WHERE id = 2")
        StoreCLITests.ok(
            try StorePostgresCLITests.run(["delete", "--table", "people", "--id", "2"], options, directory), "delete")
        StoreCLITests.ok(try put(#"{"id": 2, "name": "Bob", "email": "new@example.com", "ssn": "999"}"#), "put id 2")
        _ = try psql("UPDATE people p SET email = o.email, ssn = o.ssn FROM old_people o WHERE p.id = 2")
        let mixed = try StorePostgresCLITests.run(["get", "--table", "people", "--id", "2"], options, directory)
        #expect(mixed.status == 3 && !mixed.stdoutText.contains("222"), "\(mixed.status) \(mixed.stdoutText)")
        _ = try psql("DROP TABLE old_people; DELETE FROM people WHERE id = 2")
        StoreCLITests.ok(try put(#"{"id": 2, "name": "Bob", "email": "bob@example.com", "ssn": "222"}"#), "put again")
        _ = try psql("CREATE TABLE saved AS SELECT * FROM coffer_meta")
        let schema = "convert_from(value, 'UTF8')::jsonb"
        _ = try psql(
            "UPDATE coffer_meta SET value = convert_to(jsonb_set(\(schema), '{tables,0,fields,3,sealed}', 'false')::text, 'UTF8') WHERE name = 'schema'"
        )
        let unsealed = try put(#"{"name": "Cat", "email": "cat@example.com", "ssn": "333"}"#)
        #expect(unsealed.status == 3, "put after the tamper: \(unsealed.status) \(unsealed.stderr)")
        #expect(try psql("SELECT count(*) FROM people") == "2\n")
        _ = try psql("DELETE FROM coffer_meta; INSERT INTO coffer_meta SELECT * FROM saved")
        StoreCLITests.ok(try StorePostgresCLITests.run(["rotate"], options, directory), "rotate")
        _ = try psql("DELETE FROM coffer_meta; INSERT INTO coffer_meta SELECT * FROM saved")
        let rolledBack = try put(#"{"name": "Cat", "email": "cat@example.com", "ssn": "333"}"#)
        #expect(rolledBack.status == 3 && rolledBack.stderr.contains("an older copy of it was put back"))
        StoreCLITests.ok(try StorePostgresCLITests.run(["accept-rollback"], options, directory), "accept-rollback")
        StoreCLITests.ok(
            try StorePostgresCLITests.run(["delete", "--table", "people", "--id", "2"], options, directory), "delete")
        let next = try put(#"{"name": "Dan", "email": "dan@example.com", "ssn": "444"}"#)
        StoreCLITests.ok(next, "put after the delete")
        #expect(next.stdoutText == "{\"id\":3}\n")
    }
    #endif
}
