import Foundation
import Testing

/// Tables kept per tenant under someone who can write the database but
/// holds no key (issue 58): every change is made with sqlite3 or psql,
/// and every backup with cp or pg_dump, never through Coffer.
@Suite(.serialized) struct StoreTenantCLITests {
    static let schema = """
        {"tables": [{"name": "people", "primaryKey": "id", "tenant": "org",
          "fields": [{"name": "id", "type": "integer"},
                     {"name": "org", "type": "text"},
                     {"name": "name", "type": "text"},
                     {"name": "email", "type": "text", "sealed": true,
                      "indexes": [{"name": "email_exact", "transforms": ["trim", "lowercase"], "bits": 16}]},
                     {"name": "ssn", "type": "text", "sealed": true, "bind": ["name"]}]}]}
        """

    static let people = """
        {"org": "acme", "name": "Ann", "email": "ann@example.com", "ssn": "111-11-1111"}
        {"org": "acme", "name": "Bob", "email": "bob@example.com", "ssn": "222-22-2222"}
        {"org": "globex", "name": "Ann", "email": "ann@example.com", "ssn": "333-33-3333"}

        """

    /// Where the store is, and the tools an operator uses on it.
    struct Place {
        /// `coffer store ARGUMENTS` on the store.
        let coffer: ([String], [UInt8]) throws -> CLI.Result
        /// The database's own client: SQL in, its output.
        let sql: (String) throws -> String
        /// A tenant's encoded value (`t` ‖ UTF-8) as an SQL literal.
        let tenant: (String) -> String
        /// SQL for an expression's bytes in upper-case hex, and for bytes given so.
        let hexOf: (String) -> String
        let bytes: (String) -> String
        /// A copy of the whole database, and putting it back.
        let backup: () throws -> Void
        let restore: () throws -> Void
    }

    static func hex(_ text: String) -> String {
        Array(("t" + text).utf8).map { String(format: "%02x", $0) }.joined()
    }

    static func sqlitePlace() throws -> (Place, TemporaryDirectory) {
        let directory = try StoreCLITests.setUp(schema: schema)
        let file = directory.url.appendingPathComponent("s.sqlite")
        let copy = directory.url.appendingPathComponent("before.sqlite")
        let place = Place(
            coffer: { try StoreCLITests.store($0, directory, stdin: $1) },
            sql: { try StoreTamperCLITests.sqlite($0, directory) },
            tenant: { "X'\(hex($0))'" },
            hexOf: { "hex(\($0))" },
            bytes: { "X'\($0)'" },
            backup: { try FileManager.default.copyItem(at: file, to: copy) },
            restore: {
                for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file.path + suffix) }
                try FileManager.default.removeItem(at: file)
                try FileManager.default.copyItem(at: copy, to: file)
            })
        return (place, directory)
    }

    static func ok(_ result: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        StoreCLITests.ok(result, what, sourceLocation: sourceLocation)
    }

    /// The whole check, on either database.
    static func check(_ place: Place, backupsReach: Bool) throws {
        ok(try place.coffer(["put", "--table", "people"], Array(people.utf8)), "put")
        // The same value in two tenants: unrelated index values.
        #expect(try place.sql("SELECT count(DISTINCT email_exact) FROM people WHERE id IN (1, 3)") == "2\n")
        let found = try place.coffer(
            ["find", "--table", "people", "--where", "org=acme", "--where", "email=ann@example.com"], [])
        ok(found, "find in acme")
        #expect(found.stdoutText.contains("111-11-1111") && !found.stdoutText.contains("333-33-3333"))
        let unnamed = try place.coffer(["find", "--table", "people", "--where", "name=Ann"], [])
        #expect(unnamed.status == 64 && unnamed.stderr.contains("kept per tenant"), "\(unnamed.stderr)")

        // A cell of acme's Ann moved into globex's Ann, with her life: refused.
        try place.sql("CREATE TABLE saved AS SELECT * FROM people WHERE id = 3")
        try place.sql(
            "UPDATE people SET ssn = (SELECT ssn FROM people WHERE id = 1), coffer_life = (SELECT coffer_life FROM people WHERE id = 1) WHERE id = 3"
        )
        let moved = try place.coffer(["get", "--table", "people", "--id", "3"], [])
        #expect(moved.status != 0 && !moved.stdoutText.contains("111-11-1111"), "\(moved.status) \(moved.stderr)")
        try place.sql(
            "UPDATE people SET ssn = (SELECT ssn FROM saved), coffer_life = (SELECT coffer_life FROM saved) WHERE id = 3"
        )
        ok(try place.coffer(["get", "--table", "people", "--id", "3"], []), "get, put back")

        // acme's key row copied over globex's: refused as a changed state.
        let (acme, globex) = (place.tenant("acme"), place.tenant("globex"))
        try place.sql("CREATE TABLE saved_keys AS SELECT * FROM coffer_tenant_keys")
        try place.sql(
            "UPDATE coffer_tenant_keys SET keys = (SELECT keys FROM saved_keys WHERE tenant = \(acme)) WHERE tenant = \(globex)"
        )
        let copied = try place.coffer(["get", "--table", "people", "--id", "3"], [])
        #expect(copied.status == 3 && copied.stderr.contains("changed without the store's keys"), "\(copied.stderr)")
        #expect(!copied.stdoutText.contains("111-11-1111"))
        let verify = try place.coffer(["verify"], [])
        #expect(verify.status == 3 && verify.stdoutText.contains("coffer_tenant_keys"), "\(verify.stdoutText)")
        try place.sql(
            "UPDATE coffer_tenant_keys SET keys = (SELECT keys FROM saved_keys WHERE tenant = \(globex)) WHERE tenant = \(globex)"
        )
        try place.sql("DROP TABLE saved; DROP TABLE saved_keys")
        ok(try place.coffer(["verify"], []), "verify, put back")

        // A backup, then the shred.
        let acmeKeys = try place.sql("SELECT \(place.hexOf("keys")) FROM coffer_tenant_keys WHERE tenant = \(acme)")
        try place.backup()
        let shred = try place.coffer(["shred-tenant", "--table", "people", "--tenant", "acme"], [])
        ok(shred, "shred-tenant")
        #expect(shred.stdoutText.contains("2 records deleted"))
        #expect(try place.sql("SELECT count(*) FROM people") == "1\n")
        #expect(
            try place.sql("SELECT \(place.hexOf("keys")) FROM coffer_tenant_keys WHERE tenant = \(acme)") != acmeKeys)
        let gone = try place.coffer(["find", "--table", "people", "--where", "org=acme"], [])
        #expect(gone.status != 0 && gone.stderr.contains("shredded"), "\(gone.stderr)")
        let refused = try place.coffer(
            ["put", "--table", "people"], Array(#"{"org": "acme", "name": "Cy", "email": "c@example.com"}"#.utf8))
        #expect(refused.status != 0 && refused.stderr.contains("shredded"), "\(refused.stderr)")
        let other = try place.coffer(
            ["find", "--table", "people", "--where", "org=globex", "--where", "email=ann@example.com"], [])
        #expect(other.stdoutText.contains("333-33-3333"), "\(other.stderr)")
        ok(try place.coffer(["verify"], []), "verify after the shred")
        // The keys the shred replaced put back over its tombstone: the key
        // rows no longer match their digest.
        let tombstone = try place.sql("SELECT \(place.hexOf("keys")) FROM coffer_tenant_keys WHERE tenant = \(acme)")
        func setAcmeKeys(_ hex: String) throws {
            let value = place.bytes(hex.trimmingCharacters(in: .whitespacesAndNewlines))
            try place.sql("UPDATE coffer_tenant_keys SET keys = \(value) WHERE tenant = \(acme)")
        }
        try setAcmeKeys(acmeKeys)
        let unshredded = try place.coffer(["verify"], [])
        #expect(
            unshredded.status == 3 && unshredded.stdoutText.contains("coffer_tenant_keys: its rows do not match"),
            "\(unshredded.stdoutText)")
        try setAcmeKeys(tombstone)
        try place.sql("DELETE FROM coffer_tenant_keys WHERE tenant = \(acme)")
        let deleted = try place.coffer(["verify"], [])
        #expect(deleted.status == 3 && deleted.stdoutText.contains("coffer_tenant_keys: 1 record fewer"))
        try place.sql(
            "INSERT INTO coffer_tenant_keys (tbl, tenant, keys) VALUES ('people', \(acme), \(place.bytes(tombstone.trimmingCharacters(in: .whitespacesAndNewlines))))"
        )
        ok(try place.coffer(["verify"], []), "verify, the tombstone put back")

        // The backup put back: with the keys wrapped inside the database,
        // the shred did not reach it (docs/store.md, "Tenants"). It is an
        // older record set, so it is taken on purpose first.
        try place.restore()
        ok(try place.coffer(["accept-rollback"], []), "accept-rollback")
        let restored = try place.coffer(["get", "--table", "people", "--id", "1"], [])
        if backupsReach {
            #expect(restored.status != 0)
        } else {
            ok(restored, "get from the backup")
            #expect(restored.stdoutText.contains("111-11-1111"))
        }
    }

    @Test func tenantsOnSQLite() throws {
        let (place, directory) = try Self.sqlitePlace()
        try Self.check(place, backupsReach: false)
        _ = directory
    }

    /// After a shred, no copy of the tenant's sealed keys is left in the
    /// SQLite file, its WAL or its shared memory (read with cat).
    @Test func aShredLeavesNoCopyOfTheKeysInTheFiles() throws {
        let (place, directory) = try Self.sqlitePlace()
        Self.ok(try place.coffer(["put", "--table", "people"], Array(Self.people.utf8)), "put")
        let hex = try place.sql("SELECT hex(keys) FROM coffer_tenant_keys WHERE tenant = \(place.tenant("acme"))")
        let keys = Data(
            stride(from: 0, to: hex.count - 1, by: 2).compactMap { offset -> UInt8? in
                let start = hex.index(hex.startIndex, offsetBy: offset)
                return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)
            })
        #expect(keys.count > 60)
        Self.ok(try place.coffer(["shred-tenant", "--table", "people", "--tenant", "acme"], []), "shred-tenant")
        for suffix in ["", "-wal", "-shm"] {
            let path = directory.url.appendingPathComponent("s.sqlite" + suffix).path
            guard FileManager.default.fileExists(atPath: path) else { continue }
            let bytes = try CLI.run("/bin/cat", [path]).stdout
            #expect(Data(bytes).range(of: keys) == nil, "the keys are still in s.sqlite\(suffix)")
        }
    }

    /// One tenant's key rotated from the command line: its cells name a new
    /// key (read with sqlite3), the other tenant's do not change.
    @Test func oneTenantsKeyRotatesFromTheCommandLine() throws {
        let (place, _) = try Self.sqlitePlace()
        Self.ok(try place.coffer(["put", "--table", "people"], Array(Self.people.utf8)), "put")
        func keyIDs() throws -> String { try place.sql("SELECT org, hex(substr(ssn, 2, 4)) FROM people ORDER BY id") }
        let before = try keyIDs()
        let rotate = try place.coffer(["rotate", "--table", "people", "--tenant", "acme"], [])
        Self.ok(rotate, "rotate --tenant")
        #expect(rotate.stdoutText.contains("rotated 1 tenants' keys: 2 rows, 4 cells sealed again"))
        let after = try keyIDs().split(separator: "\n")
        let earlier = before.split(separator: "\n")
        #expect(after[0] != earlier[0] && after[1] != earlier[1] && after[2] == earlier[2], "\(earlier) \(after)")
        let both = try place.coffer(["rotate", "--table", "people", "--tenant", "acme", "--every-tenant"], [])
        #expect(both.status == 64)
        Self.ok(try place.coffer(["verify"], []), "verify")
    }

    /// One tenant's indexes moved to a new root from the command line: its
    /// index values change (read with sqlite3), the other tenant's do not,
    /// and its records are found as before.
    @Test func oneTenantsIndexesMoveFromTheCommandLine() throws {
        let (place, _) = try Self.sqlitePlace()
        Self.ok(try place.coffer(["put", "--table", "people"], Array(Self.people.utf8)), "put")
        func values() throws -> [Substring] {
            try place.sql("SELECT org, hex(email_exact) FROM people ORDER BY id").split(separator: "\n")
        }
        let before = try values()
        let reindex = try place.coffer(["reindex", "--table", "people", "--tenant", "acme"], [])
        Self.ok(reindex, "reindex --tenant")
        #expect(reindex.stdoutText.contains("reindexed 1 tenants: 2 rows, 2 index values under a new root"))
        let after = try values()
        #expect(after[0] != before[0] && after[1] != before[1] && after[2] == before[2], "\(before) \(after)")
        #expect(after[0].contains("|0002"), "index version 2: \(after[0])")
        let found = try place.coffer(
            ["find", "--table", "people", "--where", "org=acme", "--where", "email= BOB@example.com"], [])
        Self.ok(found, "find after reindex")
        #expect(found.stdoutText.contains("222-22-2222"))
        let all = try place.coffer(["reindex", "--table", "people", "--every-tenant"], [])
        Self.ok(all, "reindex --every-tenant")
        #expect(all.stdoutText.contains("reindexed 2 tenants: 3 rows, 3 index values under a new root"))
        #expect(try place.coffer(["reindex", "--tenant", "acme"], []).status == 64)
        Self.ok(try place.coffer(["verify"], []), "verify")
    }

    #if Server
    @Test(.enabled(if: StorePostgresCLITests.available)) func tenantsOnPostgres() throws {
        let schemaName = "cli_tenants"
        let (directory, options) = try StorePostgresCLITests.setUp(schemaName, schema: Self.schema)
        let environment = StorePostgresCLITests.environment
        let url = URLComponents(string: environment["COFFER_TEST_POSTGRES_URL"]!)!
        let bin = environment["COFFER_TEST_POSTGRES_BIN"]!
        let password = try String(contentsOfFile: environment["COFFER_TEST_POSTGRES_PASSWORD_FILE"]!, encoding: .utf8)
        let connection = ["-h", url.host!, "-p", "\(url.port!)", "-U", url.user!]
        let database = String(url.path.dropFirst())
        let dump = directory.url.appendingPathComponent("before.dump").path
        func tool(_ name: String, _ arguments: [String]) throws {
            let result = try CLI.run(bin + "/" + name, arguments, environment: ["PGPASSWORD": password])
            #expect(result.status == 0, "\(name): \(result.stderr)")
        }
        let place = Place(
            coffer: { try StorePostgresCLITests.run($0, options, directory, stdin: $1) },
            sql: { sql in
                let result = try StorePostgresCLITests.psql("SET search_path TO \(schemaName); " + sql)
                #expect(result.status == 0, "psql: \(result.stderr)")
                return result.stdoutText
            },
            tenant: { "'\\x\(Self.hex($0))'::bytea" },
            hexOf: { "upper(encode(\($0), 'hex'))" },
            bytes: { "'\\x\($0)'::bytea" },
            backup: { try tool("pg_dump", connection + ["-n", schemaName, "-Fc", "-f", dump, database]) },
            restore: { try tool("pg_restore", connection + ["--clean", "-n", schemaName, "-d", database, dump]) })
        try Self.check(place, backupsReach: false)
    }
    #endif
}
