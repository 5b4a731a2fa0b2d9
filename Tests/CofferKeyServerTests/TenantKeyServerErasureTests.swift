#if Server
import Coffer
import Foundation
import Testing

/// Issue 58's erasure, as an operator would run it, with coffer-server as
/// the holder of a table's tenants' keys ("tenantKeys": "holder"): a copy
/// of the SQLite file (or a pg_dump) is taken before `shred-tenant`, and
/// restored after it. The shredded tenant's cells do not open from the
/// restored backup — its key at the server is gone — while every other
/// tenant's records open and are found as before.
@Suite(.serialized) struct TenantKeyServerErasureTests {
    static let schema = """
        {"tables": [{"name": "people", "primaryKey": "id", "tenant": "org", "tenantKeys": "holder",
          "fields": [{"name": "id", "type": "integer"}, {"name": "org", "type": "text"},
            {"name": "email", "type": "text", "sealed": true,
             "indexes": [{"name": "email_exact", "transforms": ["trim", "lowercase"], "bits": 16}]},
            {"name": "bio", "type": "text", "sealed": true}]},
          {"name": "notes", "primaryKey": "id",
          "fields": [{"name": "id", "type": "integer"}, {"name": "body", "type": "text", "sealed": true}]}]}
        """

    /// A server, a service operator (keys:release, subjects:shred), the store's files.
    static func setUp() throws -> (Issuer, ServerProcess, holder: [String], state: String) {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        try ServerProcess(issuer: issuer, data: data).stop()
        let tokenFile = issuer.folder + "/tenant-token"
        try ServerKeyCLITests.secretFile(
            tokenFile,
            ServerProcess.addOperator(
                issuer: issuer, data: data, name: "tenants",
                extra: ["--scope", "keys:release", "--scope", "subjects:shred"]))
        let server = try ServerProcess(issuer: issuer, data: data)
        let state = issuer.folder + "/state"
        try FileManager.default.createDirectory(
            atPath: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard
            FileManager.default.createFile(
                atPath: issuer.folder + "/kek", contents: Data((0..<32).map { UInt8($0 * 7 & 0xff) }),
                attributes: [.posixPermissions: 0o600])
        else { throw CofferError(.io, "cannot write the KEK file") }
        try Data(schema.utf8).write(to: URL(fileURLWithPath: issuer.folder + "/schema.json"))
        return (issuer, server, ["--tenant-keys-server", server.url, "--tenant-keys-token-file", tokenFile], state)
    }

    static func store(_ arguments: [String], _ options: [String], state: String, record: String? = nil) throws -> (
        Int32, String, String
    ) {
        var arguments = arguments
        if let record {
            let file = (state as NSString).deletingLastPathComponent + "/record-\(UUID().uuidString).json"
            try Data(record.utf8).write(to: URL(fileURLWithPath: file))
            arguments.append(file)
        }
        return try ServerKeyCLITests.run(["store"] + arguments + options, environment: ["COFFER_STATE_DIR": state])
    }

    /// The operator's steps once the store exists: records of two tenants,
    /// a backup by `save`, the shred of one, `restore`, and what opens.
    static func erase(
        _ options: [String], holder: [String], state: String, save: () throws -> Void, restore: () throws -> Void,
        keyRows: () throws -> Int
    ) throws {
        let all = options + holder
        for (id, org, email) in [
            (1, "acme", "ann@acme.example"), (2, "acme", "bob@acme.example"),
            (3, "globex", "cy@globex.example"),
        ] {
            let put = try store(
                ["put", "--table", "people"], all, state: state,
                record: #"{"id": \#(id), "org": "\#(org)", "email": "\#(email)", "bio": "bio \#(id)"}"#)
            #expect(put.0 == 0, "put: \(put.2)")
        }
        #expect(try store(["put", "--table", "notes"], all, state: state, record: #"{"body": "a note"}"#).0 == 0)
        let get = { (id: Int, options: [String]) throws -> (Int32, String, String) in
            try store(["get", "--table", "people", "--id", String(id)], options, state: state)
        }
        let one = try get(1, all)
        #expect(one.0 == 0 && one.1.contains("bio 1"), "\(one)")
        // Without the holder, the held table says where its keys are; the others work.
        let without = try get(1, options)
        #expect(without.0 == 1 && without.2.contains("held outside the database"), "\(without)")
        #expect(try store(["get", "--table", "notes", "--id", "1"], options, state: state).0 == 0)

        try save()
        let shred = try store(["shred-tenant", "--table", "people", "--tenant", "acme"], all, state: state)
        #expect(shred.0 == 0, "shred-tenant: \(shred.2)")
        #expect(shred.1.contains("2 records deleted; its key destroyed at the holder"), "\(shred.1)")
        let live = try get(1, all)
        #expect(live.1.isEmpty || !live.1.contains("bio 1"), "the live database no longer has acme's records")

        try restore()
        let accept = try store(["accept-rollback"], all, state: state)
        #expect(accept.0 == 0, "accept-rollback: \(accept.2)")
        #expect(try keyRows() == 2, "the backup still holds acme's wrapped keys and globex's")
        // The backup's copy of acme's keys no longer opens: its key at the server is gone.
        for id in [1, 2] {
            let restored = try get(id, all)
            #expect(restored.0 == 2, "acme's record \(id) from the backup: \(restored)")
            #expect(restored.2.contains("was shredded at the key server"), "\(restored.2)")
            #expect(!restored.1.contains("bio \(id)"))
        }
        let found = try store(
            ["find", "--table", "people", "--where", "org=acme", "--where", "email=ann@acme.example"], all, state: state
        )
        #expect(found.0 == 2 && !found.1.contains("bio 1"), "\(found)")
        // Every other tenant, and every other table, as before.
        let globex = try get(3, all)
        #expect(globex.0 == 0 && globex.1.contains("bio 3"), "\(globex)")
        let other = try store(
            ["find", "--table", "people", "--where", "org=globex", "--where", "email= CY@globex.example"], all,
            state: state)
        #expect(other.0 == 0 && other.1.contains("bio 3"), "\(other)")
        #expect(try store(["get", "--table", "notes", "--id", "1"], all, state: state).1.contains("a note"))
        // A tenant that never wrote is shredded too, there and here: it never gets keys.
        let never = try store(["shred-tenant", "--table", "people", "--tenant", "initech"], all, state: state)
        #expect(never.0 == 0 && never.1.contains("it had no keys"), "\(never)")
        let refused = try store(
            ["put", "--table", "people"], all, state: state,
            record: #"{"id": 9, "org": "initech", "email": "x@initech.example", "bio": "b"}"#)
        #expect(refused.0 == 2 && refused.2.contains("was shredded"), "\(refused)")
    }

    @Test func aCopiedBackSQLiteFileNoLongerOpensTheShreddedTenant() throws {
        let (issuer, server, holder, state) = try Self.setUp()
        defer { server.stop() }
        let database = issuer.folder + "/people.sqlite"
        let options = ["--db", database, "--kek-file", issuer.folder + "/kek"]
        let made = try Self.store(["init", "--schema", issuer.folder + "/schema.json"], options + holder, state: state)
        #expect(made.0 == 0, "init: \(made.2)")
        let files = ["", "-wal", "-shm"]
        try Self.erase(
            options, holder: holder, state: state,
            save: {
                for suffix in files where FileManager.default.fileExists(atPath: database + suffix) {
                    try FileManager.default.copyItem(atPath: database + suffix, toPath: database + suffix + ".bak")
                }
            },
            restore: {
                for suffix in files {
                    try? FileManager.default.removeItem(atPath: database + suffix)
                    if FileManager.default.fileExists(atPath: database + suffix + ".bak") {
                        try FileManager.default.moveItem(atPath: database + suffix + ".bak", toPath: database + suffix)
                    }
                }
            },
            keyRows: { try KeyServerTests.rowCount(database, "SELECT count(*) FROM coffer_tenant_keys") })
    }

    @Test func aPgRestoreNoLongerOpensTheShreddedTenant() throws {
        let (issuer, server, holder, state) = try Self.setUp()
        defer { server.stop() }
        let (url, password) = try TestPostgres.server()
        let schema = "erase_" + String(UUID().uuidString.prefix(8)).lowercased()
        let passwordFile = issuer.folder + "/dbpass"
        try ServerKeyCLITests.secretFile(passwordFile, password)
        let options = [
            "--db", url + "?schema=" + schema, "--db-password-file", passwordFile, "--kek-file", issuer.folder + "/kek",
        ]
        let made = try Self.store(["init", "--schema", issuer.folder + "/schema.json"], options + holder, state: state)
        #expect(made.0 == 0, "init: \(made.2)")
        let dump = issuer.folder + "/people.dump"
        try Self.erase(
            options, holder: holder, state: state,
            save: { try TestPostgres.tool("pg_dump", url, ["-n", schema, "-Fc", "-f", dump]) },
            restore: {
                _ = try TestPostgres.value(url, "DROP SCHEMA \(schema) CASCADE")
                try TestPostgres.tool("pg_restore", url, ["-d", String(URL(string: url)!.path.dropFirst()), dump])
            },
            keyRows: { Int(try TestPostgres.value(url, "SELECT count(*) FROM \(schema).coffer_tenant_keys")) ?? -1 })
    }
}
#endif
