#if Server
import AsyncHTTPClient
import Coffer
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `coffer-server` executable, run as operators run it, on a loopback
/// port it picks itself.
final class ServerProcess {
    static let binary: URL = {
        if let path = ProcessInfo.processInfo.environment["COFFER_SERVER_BIN"] { return URL(fileURLWithPath: path) }
        let beside = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("coffer-server")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        return URL(fileURLWithPath: Issuer.root + "/.build/debug/coffer-server")
    }()

    let process = Process()
    let port: Int
    let scheme: String
    var url: String { "\(scheme)://127.0.0.1:\(port)" }
    var address: ServerAddress { ServerAddress(url: url) }

    /// Starts `coffer-server serve` for `issuer` over `data`; its log
    /// (stderr) goes to `log`, or nowhere.
    convenience init(
        issuer: Issuer, data: String, log: String? = nil, extra: [String] = [], environment: [String: String] = [:]
    ) throws {
        try self.init(
            arguments: try Self.serveArguments(issuer: issuer, data: data) + extra, environment: environment, log: log)
    }

    /// `serve` on a loopback port the server picks, over `data`, for `issuer`'s tokens.
    static func serveArguments(issuer: Issuer, data: String) throws -> [String] {
        [
            "serve", "--listen", "127.0.0.1:0", "--data", data, "--kek-passphrase-file", try passphraseFile(issuer),
            "--issuer", Issuer.name, "--audience", Issuer.audience, "--jwks-file", issuer.folder + "/jwks.json",
        ]
    }

    /// The options of `coffer-server serve`'s that say where the data is.
    static let dataOptions: Set<String> = [
        "--config", "--data", "--database", "--database-password-file", "--kek-passphrase-file", "--kek-keychain",
        "--kek-tag", "--kek-keychain-passphrase-file", "--kek-pkcs11-module", "--kek-pkcs11-token", "--kek-pkcs11-key",
        "--kek-pkcs11-pin-file",
    ]

    /// Runs `coffer-server kek init` with the data options among
    /// `arguments`, unless they are `--dev`'s or the folder has a KEK ring;
    /// its answer is not checked (the command run afterwards fails on
    /// anything it could not make).
    static func initialize(_ arguments: [String], environment: [String: String] = [:]) {
        guard !arguments.contains("--dev") else { return }
        if let flag = arguments.firstIndex(of: "--data"), flag + 1 < arguments.count,
            FileManager.default.fileExists(atPath: arguments[flag + 1] + "/kek.ckr")
        {
            return
        }
        var options: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            if dataOptions.contains(arguments[index]), index + 1 < arguments.endIndex {
                options += arguments[index...index + 1]
                index += 2
            } else {
                index += 1
            }
        }
        _ = try? Spawned.run(
            binary.path, ["kek", "init"] + options, environment: environment, output: .discard, errors: .discard)
    }

    /// A folder holding a `coffer-server` that runs `kek init` (over the
    /// same `--data` and `--kek-passphrase-file`) before a first `serve`,
    /// then the real one: for the reviews' reproductions, which start a
    /// server over a new folder as earlier versions allowed.
    static func initializingBinary(in folder: String) throws -> String {
        let bin = folder + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let script = """
            #!/bin/sh
            real='\(binary.path)'
            if [ "$1" = serve ]; then
              data=; pass=; previous=
              for arg in "$@"; do
                case "$previous" in --data) data=$arg ;; --kek-passphrase-file) pass=$arg ;; esac
                previous=$arg
              done
              [ -e "$data/kek.ckr" ] || "$real" kek init --data "$data" --kek-passphrase-file "$pass" >/dev/null 2>&1
            fi
            exec "$real" "$@"

            """
        guard
            FileManager.default.createFile(
                atPath: bin + "/coffer-server", contents: Data(script.utf8), attributes: [.posixPermissions: 0o755])
        else { throw CofferError(.io, "cannot write \(bin)/coffer-server") }
        return bin
    }

    /// The tests' KEK passphrase file, made once per issuer.
    static func passphraseFile(_ issuer: Issuer) throws -> String {
        let passphrase = issuer.folder + "/kek-passphrase"
        if !FileManager.default.fileExists(atPath: passphrase) {
            // Closed to others, or coffer-server refuses it.
            guard
                FileManager.default.createFile(
                    atPath: passphrase, contents: Data("a passphrase for the tests' KEK\n".utf8),
                    attributes: [.posixPermissions: 0o600])
            else { throw CofferError(.io, "cannot write \(passphrase)") }
        }
        return passphrase
    }

    /// Starts `coffer-server` with `arguments` and `environment` (added to this process's).
    /// A `serve` over a folder with no KEK ring yet is preceded by `kek
    /// init` with the same data options, as an operator makes a new server.
    init(arguments: [String], environment: [String: String] = [:], log: String? = nil) throws {
        if arguments.first == "serve" { Self.initialize(arguments, environment: environment) }
        scheme = arguments.contains("--tls-cert") ? "https" : "http"
        process.executableURL = Self.binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let stdout = Pipe()
        process.standardOutput = stdout
        if let log { _ = FileManager.default.createFile(atPath: log, contents: nil) }
        process.standardError = FileHandle(forWritingAtPath: log ?? "/dev/null")
        try process.run()
        // The first line names the port.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = stdout.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw CofferError(.malformed, "coffer-server stopped before listening") }
            line += chunk
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let colon = text.lastIndex(of: ":"),
            let port = Int(text[text.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw CofferError(.malformed, "coffer-server said \(text)") }
        self.port = port
    }

    /// A data folder `issuer.folder/data` made by a first run of the server
    /// (stopped again), with an operator added: the folder and its token.
    static func initialized(issuer: Issuer, operator name: String, extra: [String] = []) throws -> (
        data: String, token: String
    ) {
        let data = issuer.folder + "/data"
        try ServerProcess(issuer: issuer, data: data).stop()
        return (data, try addOperator(issuer: issuer, data: data, name: name, extra: extra))
    }

    /// `coffer-server operator add`: the token it prints.
    static func addOperator(
        issuer: Issuer, data: String, name: String, extra: [String] = [], environment: [String: String] = [:]
    ) throws -> String {
        let process = Process()
        process.executableURL = binary
        process.arguments =
            [
                "operator", "add", "--data", data, "--kek-passphrase-file", issuer.folder + "/kek-passphrase", "--name",
                name,
            ] + extra
        initialize(["serve"] + process.arguments!.dropFirst(2), environment: environment)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let stdout = Pipe()
        process.standardOutput = stdout
        try process.run()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM, then the server's own shutdown deadline (10 s) and a
    /// margin; a server still running after that is a failure, and is
    /// killed so that the test cannot hang on it.
    func stop(sourceLocation: SourceLocation = #_sourceLocation) {
        process.terminate()
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            Issue.record("coffer-server did not stop within 15 s of SIGTERM", sourceLocation: sourceLocation)
            kill9()
        }
    }

}

/// Where a server listens; what the clients of a test share.
struct ServerAddress: Sendable {
    let url: String

    /// POST or GET with a bearer token: status and JSON object. Through
    /// AsyncHTTPClient (URLSession on Linux sometimes never saw a response
    /// the server had sent), with a deadline, so that a server that hangs
    /// fails the test instead of stalling it.
    func request(_ path: String, method: String = "POST", token: String, body: Data? = nil) async throws -> (
        Int, [String: Any]
    ) {
        let (status, object, _) = try await exchange(path, method: method, token: token, body: body)
        return (status, object)
    }

    /// The same, with a DPoP proof when given (and the DPoP scheme), and
    /// the response's headers.
    func exchange(_ path: String, method: String = "POST", token: String, body: Data? = nil, proof: String? = nil)
        async throws -> (Int, [String: Any], HTTPHeaders)
    {
        var request = HTTPClientRequest(url: url + path)
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "Authorization", value: "\(proof == nil ? "Bearer" : "DPoP") \(token)")
        if let proof { request.headers.add(name: "DPoP", value: proof) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(20))
        let data = Data(buffer: try await response.body.collect(upTo: 1 << 20))
        let object = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        return (Int(response.status.code), object, response.headers)
    }

    /// GET `path` (with a bearer token when given): status and body as text.
    func text(_ path: String, token: String? = nil) async throws -> (Int, String) {
        var request = HTTPClientRequest(url: url + path)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(20))
        let data = try await response.body.collect(upTo: 4 << 20)
        return (Int(response.status.code), String(buffer: data))
    }
}
#endif
