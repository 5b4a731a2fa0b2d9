#if Server
import Coffer
import CofferKeyServer
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: environment["COFFER_TEST_POSTGRES_BIN"]! + "/psql")
        process.arguments = [
            "-h", components.host!, "-p", "\(components.port!)", "-U", components.user!, "-v", "ON_ERROR_STOP=1",
            "-qAt", "-c", "SET search_path TO \(schema(of: url) ?? "public"); \(sql)",
            String(components.path.dropFirst()),
        ]
        process.environment = environment.merging(["PGPASSWORD": password]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CofferError(.io, "psql failed on \(sql)") }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops (a fast shutdown: every connection is cut) or starts the
    /// server. Spawned and waited for on a thread of its own: Foundation's
    /// `Process` did not always see this child end while the test's
    /// requests kept the cooperative pool busy.
    static func control(_ action: String) async throws {
        let ctl = environment["COFFER_TEST_POSTGRES_CTL"]!
        let status: Int32 = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var actions = posix_spawn_file_actions_t()
                posix_spawn_file_actions_init(&actions)
                defer { posix_spawn_file_actions_destroy(&actions) }
                // Not the test's own output: the server it starts would keep it open.
                posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
                posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
                let argv: [UnsafeMutablePointer<CChar>?] = [strdup(ctl), strdup(action), nil]
                defer { argv.forEach { free($0) } }
                var pid = pid_t()
                guard posix_spawn(&pid, ctl, &actions, nil, argv, environ) == 0 else {
                    return continuation.resume(returning: -1)
                }
                var status: Int32 = 0
                while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
                continuation.resume(returning: status)
            }
        }
        guard status == 0 else { throw CofferError(.io, "PostgreSQL did not \(action) (status \(status))") }
    }
}
#endif
