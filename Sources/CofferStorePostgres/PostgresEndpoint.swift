#if Server
import Coffer
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// How Coffer reaches a PostgreSQL database, written once for the record
/// store's connections and the key server's pool: the URL as libpq reads
/// it (``PostgresURL``), the password given apart, TLS (``PostgresTLS``),
/// the settings every session starts with, connecting with failures said
/// for people, and (``PostgresFailure``) which failures are the
/// database's rather than the statement's.
package struct PostgresEndpoint: Sendable {
    package let url: PostgresURL
    private let password: String?
    private let tls: PostgresTLS.Settings?

    /// Names the database in messages and logs, never with a password.
    package var location: String { url.location }

    /// Parses `url` and reads its `sslrootcert` now, so that a bad URL or
    /// certificate file is refused before anything connects. `what` names
    /// the database in refusals ("a PostgreSQL store").
    package init(_ url: String, password: String?, what: String) throws {
        self.url = try PostgresURL(url, what: what)
        self.password = password
        tls = try PostgresTLS.configuration(for: self.url)
    }

    /// What every session starts with. `synchronous_commit=on`: a commit
    /// is answered only once its WAL is flushed, whatever the database or
    /// role was set to, so nothing acknowledged is lost if PostgreSQL
    /// crashes. `search_path`: the URL's schema, when it names one (quoted,
    /// so that its case is kept).
    package var startupParameters: [(String, String)] {
        var parameters = [("synchronous_commit", "on")]
        if let schema = url.schema {
            parameters.append(("search_path", "\"" + schema.replacingOccurrences(of: "\"", with: "\"\"") + "\""))
        }
        return parameters
    }

    /// The settings of one connection (the record store keeps a few).
    package func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.user, password: password, database: url.database,
            tls: try PostgresTLS.connectionTLS(tls, location: location))
        configuration.options.additionalStartupParameters = startupParameters
        return configuration
    }

    /// The settings of a pool of connections (the key server's).
    package func clientConfiguration(connections: Int, connectTimeout: Duration) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: url.host, port: url.port, username: url.user, password: password, database: url.database,
            tls: PostgresTLS.clientTLS(tls))
        configuration.options.maximumConnections = connections
        configuration.options.connectTimeout = connectTimeout
        configuration.options.additionalStartupParameters = startupParameters
        return configuration
    }

    /// One connection, the caller's thread blocked until it is open (the
    /// store's API is synchronous); a failure says why for people.
    package func connect(id: Int, what: String) throws -> PostgresConnection {
        let configuration = try connectionConfiguration()
        do {
            return try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration, id: id,
                logger: Self.quiet
            ).wait()
        } catch {
            throw refusal(error, what: what)
        }
    }

    /// Connects once and closes: a pool (the key server's) retries a
    /// refused certificate in silence until its deadline, so a server checks
    /// here at start that the database is reachable and its certificate
    /// accepted, and says why when not.
    package func probe(what: String) async throws {
        let configuration = try connectionConfiguration()
        do {
            let connection = try await PostgresConnection.connect(
                configuration: configuration, id: 0, logger: Self.quiet)
            try await connection.close()
        } catch {
            throw refusal(error, what: what)
        }
    }

    private func refusal(_ error: any Error, what: String) -> CofferError {
        CofferError(
            .io,
            "cannot connect to \(what) at \(location): \(PostgresTLS.reason(error) ?? PostgresFailure.connectionReason(error))"
        )
    }

    /// postgres-nio's logger for connections and statements: their errors
    /// reach the caller, who says them; nothing reaches a log from here.
    package static let quiet: Logger = {
        var logger = Logger(label: "coffer.postgres")
        logger.logLevel = .critical
        return logger
    }()
}

/// What a PostgreSQL error means to Coffer, by its SQLSTATE.
package enum PostgresFailure {
    package static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// A unique key taken: by another record with this key (the store),
    /// or by a concurrent transaction (the key server runs it again).
    package static func isUniqueViolation(_ error: any Error) -> Bool { sqlState(error) == "23505" }

    /// A transaction that lost a race and may run again as it was: a
    /// unique key taken meanwhile, a serialization failure, a deadlock.
    package static func lostRace(_ error: any Error) -> Bool {
        ["23505", "40001", "40P01"].contains(sqlState(error) ?? "")
    }

    /// SQLSTATE classes that say the database, not the statement, failed:
    /// connection exceptions, insufficient resources, operator
    /// intervention (shutdown, restart), system errors; and lost races.
    package static func transient(_ state: String) -> Bool {
        ["08", "53", "57", "58"].contains(String(state.prefix(2))) || state == "40001" || state == "40P01"
    }

    /// The server's message and SQLSTATE, except for data exceptions
    /// (class 22), whose messages may quote the value refused (a clear
    /// field's): those say only their SQLSTATE.
    package static func reason(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(type(of: error))" }
        guard let state = error.serverInfo?[.sqlState] else { return "\(error.code)" }
        if state.hasPrefix("22") { return "a value was refused (SQLSTATE \(state))" }
        return (error.serverInfo?[.message] ?? "error") + " (SQLSTATE \(state))"
    }

    /// A failure before any statement: the socket's own error (refused,
    /// no route, a name not found) when there is one, else the server's.
    package static func connectionReason(_ error: any Error) -> String {
        if let error = error as? PSQLError, error.serverInfo == nil, let underlying = error.underlying {
            return "\(underlying)"
        }
        return reason(error)
    }
}
#endif
