#if Server
import Coffer
import CofferStorePostgres
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// A PostgreSQL database as the key server uses it: a pool of connections
/// (postgres-nio's `PostgresClient`, run by a task of its own), every
/// operation bounded by a deadline, and failures that are the database's
/// (down, restarting, out of connections) answered `503
/// database-unavailable` with `Retry-After`, never a hang.
final class PostgresDatabase: Sendable {
    let client: PostgresClient
    /// Names the database in messages and logs, never with a password.
    let location: String
    let endpoint: PostgresEndpoint
    let schema: String?
    let deadline: Duration
    private let runner: Task<Void, Never>
    let logger: Logger
    /// Logs the database going away and coming back.
    let availability: DatabaseAvailability

    /// `url` is `postgres://USER@HOST[:PORT]/DATABASE[?schema=NAME&sslmode=…&sslrootcert=…]`;
    /// the password comes apart, never inside the URL. TLS is the record
    /// store's (``PostgresTLS``): `verify-full` by default off loopback.
    init(url: String, password: String?, connections: Int = 16, deadline: Duration = .seconds(3)) throws {
        endpoint = try PostgresEndpoint(url, password: password, what: "a PostgreSQL database")
        schema = endpoint.url.schema
        if let schema {
            guard KeyName.isToken(schema, lowercaseOnly: true, range: 1...63), schema.first!.isLetter else {
                throw CofferError(.invalidArgument, "a schema name is 1–63 of a-z, 0-9, '_', starting with a letter")
            }
        }
        location = endpoint.location
        availability = DatabaseAvailability(location: endpoint.location)
        // Every session waits for its commits' WAL flush before the key it
        // holds is answered, and starts in the URL's schema (the endpoint's
        // startup settings, shared with the record store).
        let configuration = endpoint.clientConfiguration(connections: connections, connectTimeout: deadline)
        logger = Self.quiet
        client = PostgresClient(configuration: configuration, backgroundLogger: Self.quiet)
        self.deadline = deadline
        let client = self.client
        runner = Task { await client.run() }
    }

    func close() async {
        runner.cancel()
        _ = await runner.value
    }

    /// One statement outside a transaction, its rows decoded as `T`.
    func query<T: Sendable>(_ query: PostgresQuery, _ read: @escaping @Sendable (PostgresRowSequence) async throws -> T)
        async throws -> T
    {
        try await bounded {
            try await read(try await self.client.query(query, logger: self.logger))
        }
    }

    /// `body` in one transaction on one connection, committed when it
    /// returns and rolled back when it throws. A transaction that lost a
    /// race (a unique key taken meanwhile, a serialization failure) runs
    /// again, up to three times.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws
        -> T
    {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await bounded {
                    try await self.client.withConnection { connection in
                        try await connection.query("BEGIN", logger: self.logger)
                        do {
                            let value = try await body(connection)
                            try await connection.query("COMMIT", logger: self.logger)
                            return value
                        } catch {
                            _ = try? await connection.query("ROLLBACK", logger: self.logger)
                            throw error
                        }
                    }
                }
            } catch let error as PSQLError where attempt < 3 && PostgresFailure.lostRace(error) {
                continue
            }
        }
    }

    /// `body`, or `503 database-unavailable` once the deadline passes or
    /// the database fails in a way that is not the request's.
    func bounded<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            let value = try await Self.race(body, deadline: deadline)
            availability.up()
            return value
        } catch let error as PSQLError {
            if PostgresFailure.lostRace(error) { throw error }
            if let state = error.serverInfo?[.sqlState], !PostgresFailure.transient(state) {
                throw KeyServerError(.databaseError, "the database refused a statement (\(state))")
            }
            availability.down("is unreachable or restarting")
            throw Self.unavailable("is unreachable or restarting")
        } catch let error as KeyServerError where error.code == .databaseUnavailable {
            availability.down("did not answer in time")
            throw error
        }
    }

    /// `body`'s result, or `503 database-unavailable` at `deadline`, which
    /// ever comes first. Unlike a task group, this does not wait for `body`
    /// after the deadline: a statement stuck on a connection that will never
    /// answer (seen while PostgreSQL restarts) is cancelled and left behind,
    /// and the request is answered at once. One task runs `body`; the
    /// deadline is a timer on an event loop, cancelled when `body` ends.
    static func race<T: Sendable>(_ body: @escaping @Sendable () async throws -> T, deadline: Duration)
        async throws -> T
    {
        let state = Locked(RaceState<T>())
        return try await withCheckedThrowingContinuation { continuation in
            state.withLock { $0.waiting = continuation }
            let work = Task {
                let result: Result<T, any Error>
                do { result = .success(try await body()) } catch { result = .failure(error) }
                let (waiting, timer) = state.withLock { ($0.waiting.take(), $0.timer.take()) }
                timer?.cancel()
                waiting?.resume(with: result)
            }
            let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .init(deadline)) {
                guard let late = state.withLock({ $0.waiting.take() }) else { return }
                work.cancel()
                late.resume(throwing: unavailable("did not answer within \(deadline)"))
            }
            // Kept only while `body` runs; cancelled here if it already ended.
            let ended = state.withLock { state in
                if state.waiting == nil { return true }
                state.timer = timer
                return false
            }
            if ended { timer.cancel() }
        }
    }

    private struct RaceState<T: Sendable>: Sendable {
        var waiting: CheckedContinuation<T, any Error>?
        var timer: Scheduled<Void>?
    }

    static func unavailable(_ what: String) -> KeyServerError {
        KeyServerError(.databaseUnavailable, "the database \(what); try again shortly")
    }

    // MARK: schema

    /// The migrations, in order; each runs once, in its own transaction,
    /// under an advisory lock so that replicas starting at once do not race.
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE keys (realm text NOT NULL, subject text NOT NULL, device text NOT NULL, purpose text NOT NULL,
              version integer NOT NULL, wrapped bytea NOT NULL, created bigint NOT NULL,
              PRIMARY KEY (realm, subject, device, purpose, version))
            """,
            """
            CREATE TABLE key_floors (realm text NOT NULL, subject text NOT NULL, device text NOT NULL,
              purpose text NOT NULL, minimum integer NOT NULL, PRIMARY KEY (realm, subject, device, purpose))
            """,
            """
            CREATE TABLE subjects (realm text NOT NULL, subject text NOT NULL, shred_at bigint NOT NULL,
              shredded boolean NOT NULL DEFAULT false, PRIMARY KEY (realm, subject))
            """,
            """
            CREATE TABLE operators (hash bytea PRIMARY KEY, name text NOT NULL UNIQUE, scopes text NOT NULL,
              created bigint NOT NULL)
            """,
        ],
        [
            """
            CREATE TABLE audit (seq bigint PRIMARY KEY, at bigint NOT NULL, actor text NOT NULL, action text NOT NULL,
              realm text NOT NULL, subject text NOT NULL, device text NOT NULL, purpose text NOT NULL,
              version bigint NOT NULL, detail text NOT NULL, hash bytea NOT NULL)
            """,
            "CREATE INDEX audit_subject ON audit (realm, subject, seq)",
        ],
        [
            """
            CREATE TABLE rate_counts (bucket text NOT NULL, window_end bigint NOT NULL, count integer NOT NULL,
              PRIMARY KEY (bucket, window_end))
            """,
            "CREATE TABLE dpop_proofs (hash bytea PRIMARY KEY, expires bigint NOT NULL)",
            "CREATE TABLE server_secrets (name text PRIMARY KEY, value bytea NOT NULL)",
        ],
        [
            "CREATE INDEX dpop_proofs_expires ON dpop_proofs (expires)",
            "CREATE INDEX rate_counts_window ON rate_counts (window_end)",
        ],
        [PostgresKeyRows.auditFunction, PostgresKeyRows.releaseFunction],
        [
            """
            CREATE TABLE audit_anchors (seq bigint PRIMARY KEY, hash bytea NOT NULL, at bigint NOT NULL,
              mac bytea NOT NULL)
            """
        ],
        // Operators made before this have no realm (NULL) and are refused.
        ["ALTER TABLE operators ADD COLUMN realm text"],
        [
            """
            CREATE TABLE store_anchors (realm text NOT NULL, store text NOT NULL, state bytea NOT NULL,
              updated bigint NOT NULL, PRIMARY KEY (realm, store))
            """
        ],
        // Operators made before this never expire (NULL).
        ["ALTER TABLE operators ADD COLUMN expires bigint"],
        // The KEK ring, shared by every replica (docs/key-server-operating.md).
        ["CREATE TABLE kek_ring (id integer PRIMARY KEY CHECK (id = 1), ring bytea NOT NULL)"],
        // Releases whose audit names their actor (a service's, scope keys:release).
        [PostgresKeyRows.releaseFunctionWithActors],
        // Keyed links: each entry's batch nonce (empty for the entries
        // linked before, by SHA-256 alone), and the functions that key them.
        // The unkeyed ones go, so that a replica of an older version still
        // running fails its appends instead of adding plain links, which
        // `audit verify` would refuse after keyed ones.
        [
            "ALTER TABLE audit ADD COLUMN link bytea NOT NULL DEFAULT ''::bytea",
            PostgresKeyRows.keyedAuditFunction, PostgresKeyRows.keyedReleaseFunction,
            "DROP FUNCTION coffer_release_by, coffer_release, coffer_audit_append",
        ],
    ]

    /// Brings the schema up to date; refuses a database a newer server
    /// migrated, and, unless `creating`, one with no key server tables yet.
    func migrate(creating: Bool = true) async throws {
        let schema = self.schema
        let logger = self.logger
        try await transaction { db in
            // One lock for every replica of every version of the server.
            try await db.query("SELECT pg_advisory_xact_lock(7365487310561384)", logger: logger)
            if let schema {
                try await db.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(schema)"), logger: logger)
            }
            try await db.query(
                "CREATE TABLE IF NOT EXISTS coffer_server_migrations (version integer PRIMARY KEY, applied bigint NOT NULL)",
                logger: logger)
            var applied = 0
            for try await version in try await db.query(
                "SELECT coalesce(max(version), 0) FROM coffer_server_migrations", logger: logger
            ).decode(Int.self) {
                applied = version
            }
            guard applied > 0 || creating else {
                throw CofferError(
                    .refused,
                    "the PostgreSQL database\(schema.map { " (schema \($0))" } ?? "") has no key server tables: coffer-server kek init makes them, once, for a new key server"
                )
            }
            guard applied <= Self.migrations.count else {
                throw CofferError(
                    .unsupported,
                    "the key server database is at schema version \(applied); this coffer-server knows up to \(Self.migrations.count)"
                )
            }
            for (index, statements) in Self.migrations.enumerated().dropFirst(applied) {
                for statement in statements { try await db.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
                let now = Int64(Date().timeIntervalSince1970)
                try await db.query(
                    "INSERT INTO coffer_server_migrations (version, applied) VALUES (\(index + 1), \(now))",
                    logger: logger)
            }
        }
    }
}

extension PostgresConnection {
    /// A statement in the transaction this connection is in.
    @discardableResult
    func run(_ query: PostgresQuery) async throws -> PostgresRowSequence {
        try await self.query(query, logger: PostgresDatabase.quiet)
    }
}

extension PostgresDatabase {
    /// postgres-nio's logger for statements: errors reach the caller, not the log.
    static var quiet: Logger { PostgresEndpoint.quiet }
}
#endif
