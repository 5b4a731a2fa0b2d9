import ArgumentParser
import Coffer
import CofferKeyClient
import Foundation

enum ServerKeyAuth {
    /// A token file's first line (a JWT or an operator token); never argv.
    static func token(_ path: String) throws -> String {
        let bytes = try Input.readAll(path: path, what: "the token file", secret: true)
        let token = String(decoding: bytes, as: UTF8.self).prefix { $0 != "\n" && $0 != "\r" }
        guard !token.isEmpty else { throw CLIFailure("the token file \(path) is empty", status: 64) }
        return String(token)
    }
}

/// `--kek-server URL --purpose P --token-file F`: the key server's key for
/// P, for the signed-in user of the token, as the secret that unlocks a key
/// ring or a store.
struct ServerKEKOptions: ParsableArguments {
    @Option(
        name: .customLong("kek-server"),
        help: ArgumentHelp(
            "Unlock with your key from this Coffer key server (with --purpose, --token-file).", valueName: "URL"))
    var kekServer: String?

    @Option(help: "The purpose of the key server's key (with --kek-server).") var purpose: String?

    @Option(help: ArgumentHelp("Your sign-in token (a JWT), from this file (with --kek-server).", valueName: "F"))
    var tokenFile: String?

    var given: Bool { kekServer != nil }

    func validate() throws {
        if given != (purpose != nil) || given != (tokenFile != nil) {
            throw ValidationError("--kek-server, --purpose and --token-file go together")
        }
    }

    /// The key as an unlock secret, or nil without --kek-server.
    func secret() throws -> UnlockSecret? {
        guard let kekServer, let purpose, let tokenFile else { return nil }
        guard let url = URL(string: kekServer) else { throw ValidationError("--kek-server takes a URL") }
        let client = try KeyServerClient(
            server: url, account: "coffer-cli", token: { try ServerKeyAuth.token(tokenFile) })
        return try Blocking.await { try await client.unlockSecret(purpose: purpose) }
    }
}

/// Runs async library calls from the CLI's synchronous commands: the main
/// thread waits while the work runs on the concurrency pool. A key
/// server's refusals become CLI failures with their own exit status.
enum Blocking {
    static func await<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                let value = try await body()
                result.withLock { $0 = .success(value) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        do {
            return try result.withLock { $0! }.get()
        } catch let error as KeyClientError {
            throw CLIFailure(
                "the key server refused: \(error)", hint: hint(error), status: status(error))
        }
    }

    static func status(_ error: KeyClientError) -> Int32 {
        switch error.status {
        case 401, 403: 2  // like a wrong passphrase
        case 409, 410: CLIFailure.refusedStatus
        case 400: 64
        case nil where error.code == .invalidArgument: 64
        case nil where error.code == .malformedResponse: 4
        default: 1
        }
    }

    static func hint(_ error: KeyClientError) -> String? {
        switch error.code.name {
        case "token-expired": "sign in again for a fresh token"
        case "unreachable": "check --server (or --kek-server) and that the server is running"
        case "key-shredded": "this user's keys were destroyed; data under them cannot be read"
        default: nil
        }
    }
}
