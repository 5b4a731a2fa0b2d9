import Foundation

/// A PostgreSQL database as Coffer's tools name it:
/// `postgres://USER@HOST[:PORT]/DATABASE[?schema=NAME]`. The password never
/// goes in the URL (it would reach argv, shell history and logs): it comes
/// from PGPASSWORD or a file, read by ``password(file:)``. Shared by
/// CofferStore's and the key server's PostgreSQL backends and their tools.
package struct PostgresURL: Sendable {
    package let host: String
    package let port: Int
    package let user: String
    package let database: String
    /// The `schema` query item: the PostgreSQL schema the tables live in.
    package let schema: String?

    /// `what` names the thing in the refusal: "a PostgreSQL store".
    package init(_ url: String, what: String) throws {
        guard let components = URLComponents(string: url),
            ["postgres", "postgresql"].contains(components.scheme ?? ""), let host = components.host, !host.isEmpty,
            let user = components.user, components.path.count > 1
        else {
            throw CofferError(.invalidArgument, "\(what) is postgres://USER@HOST[:PORT]/DATABASE[?schema=NAME]")
        }
        guard components.password == nil else {
            throw CofferError(
                .invalidArgument, "the database password does not go in the URL: give it in PGPASSWORD or a file")
        }
        self.host = host
        port = components.port ?? 5432
        self.user = user
        database = String(components.path.dropFirst())
        schema = components.queryItems?.first { $0.name == "schema" }?.value
    }

    /// True for a `postgres://` or `postgresql://` URL (else an SQLite path).
    package static func names(_ location: String) -> Bool {
        location.hasPrefix("postgres://") || location.hasPrefix("postgresql://")
    }

    /// Where the database is, with no password: for messages and logs.
    package var location: String {
        "postgres://\(user)@\(host):\(port)/\(database)" + (schema.map { "?schema=" + $0 } ?? "")
    }

    /// The password: the first line of `file`'s contents when given (read
    /// by the caller, with its checks on who may read the file), else
    /// PGPASSWORD, else none.
    package static func password(file: [UInt8]?) -> String? {
        guard let file else { return ProcessInfo.processInfo.environment["PGPASSWORD"] }
        return String(String(decoding: file, as: UTF8.self).prefix { $0 != "\n" && $0 != "\r" })
    }
}
