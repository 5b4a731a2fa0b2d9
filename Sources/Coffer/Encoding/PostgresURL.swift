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
    /// How the connection is protected: the `sslmode` query item as libpq
    /// reads it, else `verify-full` for any host but loopback or a Unix
    /// socket, where it is `prefer`.
    package let sslMode: SSLMode
    /// The `sslrootcert` query item: a PEM file of the CAs a server's
    /// certificate must chain to.
    package let sslRootCert: String?

    /// libpq's `sslmode` values but `allow` (try without TLS first), which
    /// postgres-nio cannot do.
    package enum SSLMode: String, Sendable, CaseIterable {
        /// Never TLS.
        case disable
        /// TLS when the server offers it, else in the clear; the
        /// certificate is checked only against an `sslrootcert` given.
        case prefer
        /// TLS or nothing; the certificate is checked only against an
        /// `sslrootcert` given (then as `verify-ca`).
        case require
        /// TLS, and a certificate that chains to the trusted CAs.
        case verifyCA = "verify-ca"
        /// TLS, a certificate that chains to the trusted CAs and names the host.
        case verifyFull = "verify-full"
    }

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
        let items = components.queryItems ?? []
        for item in items where !["schema", "sslmode", "sslrootcert"].contains(item.name) {
            throw CofferError(
                .invalidArgument, "\(what) URL takes schema, sslmode and sslrootcert, not \(item.name)")
        }
        schema = items.first { $0.name == "schema" }?.value
        if let mode = items.first(where: { $0.name == "sslmode" })?.value {
            guard let known = SSLMode(rawValue: mode) else {
                throw CofferError(
                    .invalidArgument,
                    "sslmode is one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", ")), not \(mode)")
            }
            sslMode = known
        } else {
            sslMode = Self.isLocal(host) ? .prefer : .verifyFull
        }
        sslRootCert = items.first { $0.name == "sslrootcert" }?.value.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Loopback (`localhost`, 127.0.0.0/8, `::1`) or a Unix socket's folder:
    /// no network between the client and the server.
    package static func isLocal(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("/") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
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
