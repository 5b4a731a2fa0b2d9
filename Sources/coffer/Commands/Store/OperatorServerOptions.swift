import ArgumentParser
import CofferKeyClient
import Foundation

/// A coffer-server a `coffer store` command reaches with an operator
/// token: its URL, the token read from its file, and the transport that
/// trusts its certificate. The anchor's options (`--anchor-*`) and the
/// tenant keys' (`--tenant-keys-*`) are read the same way: each option,
/// else its environment variable; a token or CA file without a server is
/// refused, as is a server without a token file or with a URL that is
/// not one.
struct OperatorServer: CustomStringConvertible {
    let url: URL
    let token: String
    let transport: any KeyServerTransport

    /// The server, never its token.
    var description: String { "\(url.absoluteString) (operator token redacted)" }

    /// The server `--NAME-server` (or `COFFER_VARIABLE_SERVER`) names, or nil
    /// when none is named; `scope` is what the token must hold, for the
    /// error that asks for one; `others` are more options that need the server.
    static func named(
        _ name: String, variable: String, scope: String, server: String?, tokenFile: String?, caFile: String?,
        others: [(value: String?, option: String)] = []
    ) throws -> OperatorServer? {
        let environment = ProcessInfo.processInfo.environment
        func given(_ value: String?, _ setting: String) -> String? {
            value ?? environment["COFFER_\(variable)_\(setting)"].flatMap { $0.isEmpty ? nil : $0 }
        }
        let (server, tokenFile, caFile) = (
            given(server, "SERVER"), given(tokenFile, "TOKEN_FILE"), given(caFile, "CA_FILE")
        )
        guard let server else {
            for (value, option) in [(tokenFile, "--\(name)-token-file"), (caFile, "--\(name)-ca-file")] + others
            where value != nil {
                throw ValidationError("\(option) is for --\(name)-server")
            }
            return nil
        }
        guard let tokenFile else {
            throw ValidationError(
                "--\(name)-server needs --\(name)-token-file (an operator token of scope \(scope))")
        }
        guard let url = URL(string: server), url.scheme == "https" || url.scheme == "http", url.host != nil else {
            throw ValidationError("--\(name)-server takes the key server's URL (https://HOST[:PORT])")
        }
        let what = "the \(name.replacingOccurrences(of: "-", with: " ")) token file"
        let token = String(decoding: try Input.readAll(path: tokenFile, what: what, secret: true), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return OperatorServer(
            url: url, token: token, transport: try ServerTrust.transport(caFile: caFile, option: "--\(name)-ca-file"))
    }
}
