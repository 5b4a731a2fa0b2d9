#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import Testing

/// Which database a test's key server keeps its rows in.
enum Backend: String, CustomTestStringConvertible, CaseIterable, Sendable {
    case sqlite, postgres
    var testDescription: String { rawValue }

    /// What `coffer-server` is given to keep its rows here: flags and
    /// environment (SQLite: the default file in its folder; PostgreSQL: a
    /// fresh schema, the password in PGPASSWORD).
    func serverOptions() throws -> (arguments: [String], environment: [String: String]) {
        switch self {
        case .sqlite: return ([], [:])
        case .postgres:
            return (["--database", try TestPostgres.freshURL()], ["PGPASSWORD": try TestPostgres.server().password])
        }
    }
}

/// The throwaway PostgreSQL server scripts/with-postgres runs (scripts/test
/// runs the key server's suites under it). Each test keeps its tables in
/// a PostgreSQL schema of its own, so tests never meet.
enum TestPostgres {
    static let environment = ProcessInfo.processInfo.environment

    /// The server's URL and password; a test that needs them fails without them.
    static func server() throws -> (url: String, password: String) {
        guard let url = environment["COFFER_TEST_POSTGRES_URL"],
            let file = environment["COFFER_TEST_POSTGRES_PASSWORD_FILE"],
            let password = try? String(contentsOfFile: file, encoding: .utf8)
        else {
            throw CofferError(
                .invalidArgument, "run the key server's tests under scripts/with-postgres (COFFER_TEST_POSTGRES_URL)")
        }
        return (url, password)
    }

    /// Runs PostgreSQL's `pg_dump` (the database appended) or `pg_restore`
    /// on the test server.
    static func tool(_ name: String, _ url: String, _ arguments: [String]) throws {
        let (base, password) = try server()
        let components = URLComponents(string: base)!
        let database = String(components.path.dropFirst())
        let run = try Spawned.run(
            environment["COFFER_TEST_POSTGRES_BIN"]! + "/" + name,
            ["-h", components.host!, "-p", "\(components.port!)", "-U", components.user!] + arguments
                + (name == "pg_dump" ? [database] : []),
            environment: ["PGPASSWORD": password], errors: .capture)
        guard run.status == 0 else { throw CofferError(.io, "\(name) failed: \(run.errorText)") }
    }

    /// A new, empty schema's URL.
    static func freshURL() throws -> String {
        try server().url + "?schema=ks_"
            + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
    }

    static func schema(of url: String) -> String? {
        URLComponents(string: url)?.queryItems?.first { $0.name == "schema" }?.value
    }

    /// One value psql prints for `sql`, run in `url`'s schema.
    static func value(_ url: String, _ sql: String) throws -> String {
        let (base, password) = try server()
        let components = URLComponents(string: base)!
        let run = try Spawned.run(
            environment["COFFER_TEST_POSTGRES_BIN"]! + "/psql",
            [
                "-h", components.host!, "-p", "\(components.port!)", "-U", components.user!, "-v", "ON_ERROR_STOP=1",
                "-qAt", "-c", "SET search_path TO \(schema(of: url) ?? "public"); \(sql)",
                String(components.path.dropFirst()),
            ], environment: ["PGPASSWORD": password])
        guard run.status == 0 else { throw CofferError(.io, "psql failed on \(sql)") }
        return run.text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops (a fast shutdown: every connection is cut) or starts the
    /// server. Waited for on a thread of its own, so that the test's
    /// requests keep the cooperative pool; the server it starts gets none
    /// of the test's descriptors and not its output (`Spawned`).
    static func control(_ action: String) async throws {
        let ctl = environment["COFFER_TEST_POSTGRES_CTL"]!
        let status: Int32 = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let run = try? Spawned.run(ctl, [action], output: .discard, errors: .discard)
                continuation.resume(returning: run?.status ?? -1)
            }
        }
        guard status == 0 else { throw CofferError(.io, "PostgreSQL did not \(action) (status \(status))") }
    }
}
#endif
