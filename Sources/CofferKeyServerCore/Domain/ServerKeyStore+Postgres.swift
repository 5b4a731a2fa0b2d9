#if Server
import Coffer
import CofferStorePostgres
import Foundation
import Logging

extension ServerKeyStore {
    /// Opens the key server's tables in a PostgreSQL database, creating or
    /// migrating them (replicas starting at once take turns). Any number of
    /// stores, in any number of processes, may share one database.
    /// - Parameters:
    ///   - url: `postgres://USER@HOST[:PORT]/DATABASE[?schema=NAME]`, with
    ///     `sslmode` and `sslrootcert` as libpq reads them (`verify-full`
    ///     by default for a host off loopback; docs/key-server-postgres.md).
    ///   - password: the database password, given apart from the URL.
    ///   - kek: the key ring that seals and opens every key.
    ///   - reload: reads the key ring again, when a stored key names a KEK
    ///     key the ring in memory lacks (the KEK was rotated meanwhile).
    ///   - connections: the most connections this store opens at once.
    ///   - deadline: how long an operation may take before it is answered
    ///     `503 database-unavailable`.
    ///   - creating: whether to make the tables in a database that has none;
    ///     when false such a database is refused (`coffer-server` makes them
    ///     only in `kek init`, so that a misspelt URL is an error, not a new
    ///     empty key server).
    ///   - now: the clock, in seconds since 1970.
    public static func open(
        postgres url: String, password: String?, kek: KeyRing, reload: (@Sendable () async throws -> KeyRing)? = nil,
        connections: Int = 16, deadline: Duration = .seconds(3), creating: Bool = true,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) async throws -> ServerKeyStore {
        let database = try PostgresDatabase(
            url: url, password: password, connections: connections, deadline: deadline)
        do {
            try await database.endpoint.probe(what: "the key server's database")
            try await database.migrate(creating: creating)
        } catch {
            await database.close()
            throw error
        }
        return ServerKeyStore(rows: PostgresKeyRows(database), kek: kek, reload: reload, now: now)
    }
}
extension ServerKeyStore {
    /// Logs to `logger` when the database stops answering and when it
    /// answers again, once each (PostgreSQL; a SQLite file does not go
    /// away).
    public func logDatabaseAvailability(to logger: Logger) {
        (rows as? PostgresKeyRows)?.database.availability.log(to: logger)
    }
}
#endif
