#if Server
import Coffer
import CofferStore
import Foundation
import PostgresNIO
import Testing

@testable import CofferStorePostgres

/// The one way Coffer connects to PostgreSQL, the store's and the key
/// server's: every session starts with its commits waited for and in the
/// URL's schema, case kept, over the TLS the URL asks for.
@Suite(.serialized) struct PostgresEndpointTests {
    static func value(_ connection: PostgresConnection, _ sql: String) async throws -> String {
        var answer = ""
        for try await text in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: PostgresEndpoint.quiet)
            .decode(String.self)
        {
            answer = text
        }
        return answer
    }

    @Test(.enabled(if: PostgresTLSTests.available)) func everySessionStartsDurableInItsSchemaOverVerifiedTLS()
        async throws
    {
        let cluster = try #require(PostgresTLSTests.cluster)
        let namespace = "Mixed_\(UInt32.random(in: 0...UInt32.max))"
        let url = "postgres://coffer@localhost:\(cluster.port)/coffer?schema=\(namespace)&sslrootcert=\(cluster.ca)"
        let endpoint = try PostgresEndpoint(url, password: cluster.password, what: "a test database")
        #expect(endpoint.url.sslMode == .prefer)  // loopback: prefer, and the CA given is checked
        _ = try RecordStore.create(
            postgres: url, password: cluster.password, schema: try PostgresTLSTests.schema(),
            secret: RecordStoreTests.passphrase, kdf: RecordStoreTests.fast)
        try await endpoint.probe(what: "a test database")
        let connection = try await PostgresConnection.connect(
            configuration: try endpoint.connectionConfiguration(), id: 1, logger: PostgresEndpoint.quiet)
        // Whatever the role or database says: the startup setting wins (the
        // key server's CommitDurabilityTests set it off for the database).
        #expect(try await Self.value(connection, "SHOW synchronous_commit") == "on")
        #expect(try await Self.value(connection, "SHOW search_path") == "\"\(namespace)\"")
        #expect(
            try await Self.value(connection, "SELECT ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()") == "true"
        )
        // The store's tables went into that schema, its case kept.
        #expect(
            try await Self.value(
                connection,
                "SELECT count(*)::text FROM information_schema.tables WHERE table_schema = '\(namespace)' AND table_name = 'notes'"
            ) == "1")
        _ = try await connection.query(
            PostgresQuery(unsafeSQL: "DROP SCHEMA \"\(namespace)\" CASCADE"), logger: PostgresEndpoint.quiet)
        try await connection.close()
        // The pool's settings are the same.
        let pool = endpoint.clientConfiguration(connections: 3, connectTimeout: .seconds(2))
        #expect(pool.options.additionalStartupParameters.map(\.0) == ["synchronous_commit", "search_path"])
        #expect(pool.options.maximumConnections == 3)
    }

    @Test func aFailureToConnectSaysWhyAndNamesNoPassword() async throws {
        // A port nothing listens on (bound and closed at once is racy; 1 needs root to listen).
        let endpoint = try PostgresEndpoint(
            "postgres://coffer@127.0.0.1:1/coffer", password: "hunter2-secret", what: "a test database")
        do {
            try await endpoint.probe(what: "a test database")
            Issue.record("connected to port 1")
        } catch {
            let message = "\(error)"
            #expect(message.contains("cannot connect to a test database at"), "\(message)")
            #expect(!message.contains("hunter2"))
        }
        #expect(throws: CofferError.self) {
            try PostgresEndpoint(
                "postgres://coffer@db.example/coffer?sslrootcert=/nonexistent/ca.pem", password: nil, what: "x")
        }
    }

    @Test func failuresAreClassedBySQLState() {
        #expect(PostgresFailure.transient("08006") && PostgresFailure.transient("57P01"))
        #expect(PostgresFailure.transient("40001") && PostgresFailure.transient("53300"))
        #expect(!PostgresFailure.transient("23505") && !PostgresFailure.transient("42P01"))
        #expect(!PostgresFailure.lostRace(CofferError(.io, "not PostgreSQL's")))
        #expect(PostgresFailure.reason(CofferError(.io, "x")) == "CofferError")
    }
}
#endif
