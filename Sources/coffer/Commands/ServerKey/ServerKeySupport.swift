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
struct ServerKEKOptions {
    let kekServer: String?
    let purpose: String?
    let tokenFile: String?
    let kekVersion: Int?
    let caFile: String?

    var given: Bool { kekServer != nil }

    func validate() throws {
        if given != (purpose != nil) || given != (tokenFile != nil) {
            throw ValidationError("--kek-server, --purpose and --token-file go together")
        }
        if let kekVersion {
            guard given else { throw ValidationError("--kek-version goes with --kek-server") }
            guard kekVersion >= 1 else { throw ValidationError("--kek-version is a whole number from 1") }
        }
        if caFile != nil && !given { throw ValidationError("--kek-server-ca-file goes with --kek-server") }
    }

    private func client() throws -> (KeyServerClient, String)? {
        guard let kekServer, let purpose, let tokenFile else { return nil }
        guard let url = URL(string: kekServer) else { throw ValidationError("--kek-server takes a URL") }
        let client = try KeyServerClient(
            server: url, account: "coffer-cli", token: { try ServerKeyAuth.token(tokenFile) },
            transport: try ServerTrust.transport(caFile: caFile, option: "--kek-server-ca-file"))
        return (client, purpose)
    }

    /// The key as an unlock secret (the current version, or --kek-version),
    /// or nil without --kek-server: what a new key ring or store is sealed under.
    func secret() async throws -> UnlockSecret? {
        guard let (client, purpose) = try client() else { return nil }
        if let kekVersion {
            return try await KeyServerRefusal.mapped {
                try await client.unlockSecret(purpose: purpose, version: kekVersion)
            }
        }
        return try await KeyServerRefusal.mapped { try await client.unlockSecret(purpose: purpose) }
    }

    /// The current version of the server's key, whatever --kek-version says.
    func currentSecret() async throws -> UnlockSecret? {
        guard let (client, purpose) = try client() else { return nil }
        return try await KeyServerRefusal.mapped { try await client.unlockSecret(purpose: purpose) }
    }

    /// `body` with the server's key that opens what it opens: --kek-version,
    /// else the current version, then older ones (G12:
    /// ``KeyServerClient/unlock(purpose:device:_:)``), with a note when an
    /// older one did; nil without --kek-server. With `move`, what an older
    /// version opened is moved to the current one (a store's slot rewrapped).
    func open<T>(
        _ body: (UnlockSecret) throws -> T, moving move: ((T, UnlockSecret, UnlockSecret) throws -> Void)? = nil
    ) async throws -> T? {
        guard let (client, purpose) = try client() else { return nil }
        if kekVersion != nil { return try body(try await secret()!) }
        let opened = try await KeyServerRefusal.mapped {
            let opened = try await client.unlock(purpose: purpose, body) { try move?($0, $1, $2) }
            return (opened.value, opened.version, opened.current)
        }
        if opened.1 < opened.2, move != nil {
            StandardError.write(
                "coffer: note: opened with version \(opened.1) of the server's key for \(purpose) and moved to version \(opened.2); version \(opened.1) can be retired once every other copy has opened\n"
            )
        } else if opened.1 < opened.2 {
            StandardError.write(
                "coffer: note: opened with version \(opened.1) of the server's key for \(purpose); the current one is \(opened.2). Keep version \(opened.1) unretired while this uses it (a key ring moves with 'coffer keyring passwd --new-kek-server').\n"
            )
        }
        return opened.0
    }
}

/// A key server's refusals, as CLI failures with their own exit status
/// and hint.
enum KeyServerRefusal {
    static func mapped<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as KeyClientError {
            throw CLIFailure("the key server refused: \(error)", hint: hint(error), status: status(error))
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
        case "unreachable":
            "check --server (or --kek-server), that the server is running and, over https, that its certificate is trusted (a private CA: --ca-file, --kek-server-ca-file, --anchor-ca-file)"
        case "key-shredded": "this user's keys were destroyed; data under them cannot be read"
        case "kek-unavailable", "database-unavailable": "the server cannot reach what it needs now; try again shortly"
        default: nil
        }
    }
}
