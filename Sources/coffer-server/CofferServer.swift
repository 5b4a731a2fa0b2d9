#if Server
import ArgumentParser
import Coffer
import CofferKeyServerCore
import CofferPKCS11
import CofferKeychain
import Foundation

/// `coffer-server`: the key server (docs/key-server.md). Only reads its
/// options and runs CofferKeyServer; nothing here is policy.
@main
struct CofferServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Releases a key per user (and device, and purpose) to apps whose users have signed in.",
        discussion: """
            Keys are rows sealed under the server's KEK, a key ring in DIR/kek.ckr unlocked by a \
            passphrase file (made by `coffer-server kek init`). Sign-in tokens are JWTs checked against the \
            issuer's keys (a JWKS file). Operators, who rotate, retire and shred, use tokens made by \
            `coffer-server operator add`.
            """,
        version: CofferVersion.string,
        subcommands: [Serve.self, Operator.self, KEK.self, Audit.self, Backup.self],
        defaultSubcommand: Serve.self)

    /// As ArgumentParser's, with a hint for an older KEK ring put back and
    /// an exit status for each class of failure (``ExitClass``).
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let error as CofferError where error.code == .rolledBack {
            fail(
                "\(error); restore the newest kek.ckr, or, if this older copy was restored on purpose, run 'coffer-server kek accept-restore' with the same --data and KEK options",
                .badData)
        } catch let failure as ServerFileFailure {
            // A file's problem, not the command line's: no usage text after it.
            fail(failure.message, failure.status)
        } catch {
            guard let status = ExitClass(error) else { exit(withError: error) }
            fail("\(error)", status)
        }
    }

    static func fail(_ message: String, _ status: ExitClass) -> Never {
        FileHandle.standardError.write(Data("Error: \(message)\n".utf8))
        Foundation.exit(status.rawValue)
    }
}

/// coffer-server's exit statuses, one per class of failure (sysexits.h;
/// docs/key-server.md, "Exit statuses"): 64 for the command line (with
/// its usage text, from ArgumentParser) and 1 for anything not below.
enum ExitClass: Int32 {
    /// Stored data refused as changed or rolled back: a KEK ring that does
    /// not open under the right root, an older ring put back; and a secret
    /// file that is empty, too large, or not a regular file or a pipe
    /// (EX_DATAERR).
    case badData = 65
    /// A secret file missing or unreadable (EX_NOINPUT).
    case unreadable = 66
    /// What the server needs does not answer: the database, the HSM's
    /// token (EX_UNAVAILABLE); trying again later may work.
    case unavailable = 69
    /// A secret refused: a KEK passphrase, keychain passphrase or PIN that
    /// opens nothing, and a secret file open to other users (EX_NOPERM).
    case refused = 77

    init?(_ error: any Error) {
        if let error = error as? KeyServerError, error.code.kind == .unavailable {
            self = .unavailable
            return
        }
        guard let error = error as? CofferError else { return nil }
        switch error.code {
        case .keyHolderUnavailable: self = .unavailable
        case .wrongPassword: self = .refused
        case .rolledBack, .stateAuthenticationFailed, .headerAuthenticationFailed, .payloadAuthenticationFailed:
            self = .badData
        default: return nil
        }
    }
}

/// A secret file the server cannot use, with the exit status of its class.
struct ServerFileFailure: Error {
    let message: String
    let status: ExitClass

    init(_ message: String, _ status: ExitClass) {
        self.message = message
        self.status = status
    }
}

/// Where the server keeps its data. Each setting comes from its flag,
/// else from the environment (`COFFER_SERVER_DATA`, …), else from the
/// `--config` JSON file (`{"data": …, "kek": {"passphrase": {"file": …}}}`).
struct DataOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A JSON file of settings (docs/key-server.md); flags and COFFER_SERVER_* win.", valueName: "FILE"))
    var config: String?

    @Option(
        name: .customLong("data"), help: ArgumentHelp("The server's folder (KEK key ring, database).", valueName: "DIR")
    )
    var directory: String?

    @Option(
        help: ArgumentHelp(
            "The database: an SQLite path (default DIR/keys.sqlite) or postgres://USER@HOST[:PORT]/DB[?schema=S], shared by replicas.",
            valueName: "URL"))
    var database: String?

    @Option(help: ArgumentHelp("The PostgreSQL password, from a file (else PGPASSWORD; never argv).", valueName: "F"))
    var databasePasswordFile: String?

    @Option(
        help: ArgumentHelp("The passphrase of the KEK key ring, from a file or /dev/fd/N (never argv).", valueName: "F")
    )
    var kekPassphraseFile: String?

    @Option(
        help: ArgumentHelp(
            "Unlock the KEK key ring with the symmetric256 key under --kek-tag in this file keychain (made when missing).",
            valueName: "PATH"))
    var kekKeychain: String?

    @Option(help: ArgumentHelp("The key's application tag in --kek-keychain.", valueName: "T")) var kekTag: String?

    @Option(help: ArgumentHelp("The file keychain's passphrase, from a file.", valueName: "F"))
    var kekKeychainPassphraseFile: String?

    @Option(
        help: ArgumentHelp(
            "Unlock the KEK key ring inside an HSM: its PKCS#11 module (absolute path); with --kek-pkcs11-token, -key, -pin-file.",
            valueName: "PATH"))
    var kekPkcs11Module: String?

    @Option(help: ArgumentHelp("The PKCS#11 token's label.", valueName: "LABEL")) var kekPkcs11Token: String?

    @Option(
        help: ArgumentHelp(
            "The label of the AES key in the token that seals the KEK ring (kek init makes it, unextractable).",
            valueName: "LABEL"))
    var kekPkcs11Key: String?

    @Option(help: ArgumentHelp("The token's user PIN, from a file or /dev/fd/N (never argv).", valueName: "F"))
    var kekPkcs11PinFile: String?

    func settings() async throws -> ServerSettings { try await ServerSettings.load(configFile: config) }

    /// The database as the start-up log names it: the SQLite path, or the
    /// PostgreSQL URL with no password.
    func databaseDescription(_ settings: ServerSettings) -> String {
        let directory = settings.value(self.directory, "data") ?? "."
        let database = settings.value(self.database, "database") ?? directory + "/keys.sqlite"
        guard var url = URLComponents(string: database), url.scheme != nil, url.password != nil else { return database }
        url.password = nil
        return url.string ?? "a PostgreSQL database"
    }

    /// Whether the database is a `postgres://` URL (else an SQLite path).
    func isPostgres(_ settings: ServerSettings) -> Bool {
        settings.value(self.database, "database").map(PostgresURL.names) ?? false
    }

    /// The KEK and the key store. Only `kek init` (and `serve --dev`)
    /// passes `creating`: every other command refuses a missing KEK ring or
    /// database, so that a misspelt setting is an error, not a new KEK
    /// (operator trial 4: a replica with `"databse"` made one and served
    /// other key bytes under the same key id).
    func open(_ settings: ServerSettings, creating: Bool = false) async throws -> ServerKeyStore {
        try await openWithRing(settings, creating: creating).store
    }

    /// The database, opened (created when `creating`) with no KEK yet.
    func openDatabase(_ settings: ServerSettings, creating: Bool) async throws -> ServerKeyStore {
        let directory = try settings.required(self.directory, "data", flag: "--data")
        let database = settings.value(self.database, "database") ?? directory + "/keys.sqlite"
        let passwordFile = settings.value(databasePasswordFile, "postgres.password.file")
        guard PostgresURL.names(database) else {
            guard !database.contains("://") else {
                throw ValidationError(
                    "--database takes an SQLite path or a postgres:// URL, not \(database.prefix(while: { $0 != ":" }))://…"
                )
            }
            guard passwordFile == nil else {
                throw ValidationError("--database-password-file is for a postgres:// database")
            }
            return try ServerKeyStore(path: database, kek: KeyRing(), creating: creating)
        }
        let password = PostgresURL.password(
            file: try passwordFile.map { Array(try ServerFiles.secretFile($0, what: "the database password file")) })
        do {
            return try await ServerKeyStore.open(
                postgres: database, password: password, kek: KeyRing(), creating: creating)
        } catch let error as CofferError where error.code == .io {
            // Its probe did not connect (unreachable, or its certificate
            // refused): the database cannot be used now, exit status 69.
            throw KeyServerError(.databaseUnavailable, error.description)
        }
    }

    /// Whether the database has the key server's tables (for `kek init`):
    /// opened without creating, under a throwaway ring that opens nothing.
    /// What a command is told when there is no ring and nothing says where one is.
    static func noRing(_ path: String) -> String {
        "there is no KEK ring at \(path) nor in the database: coffer-server kek init makes one, once, for a new key server; check --data, --database and --config for a misspelling"
    }

    func databaseExists(_ settings: ServerSettings) async -> (exists: Bool, keepsRing: Bool) {
        guard settings.value(self.directory, "data") != nil,
            let store = try? await openDatabase(settings, creating: false)
        else { return (false, false) }
        let keepsRing =
            (try? await KEKRingRow(store: store, secret: .password([0]), rollbackGuard: nil).exists()) ?? false
        await store.close()
        return (true, keepsRing)
    }

    /// The KEK key ring file, DIR/kek.ckr, unlocked by a passphrase file
    /// or by a key kept in a file keychain (whose own passphrase comes from
    /// a file; the keychain and its key are made only when `creating`).
    func kekRingFile(_ settings: ServerSettings, creating: Bool = false) throws -> KeyRingStore {
        let directory = try settings.required(self.directory, "data", flag: "--data")
        let path = directory + "/kek.ckr"
        // The KEK's own secrets are read first, so that a bad one is the error.
        if let hsm = try kekHSM(settings) {
            if creating { try hsm.prepare(creating: true) }
            // Guarded as the passphrase ring is: the token holds the key,
            // not the ring's generation.
            return KeyRingStore(path: path, secret: .pkcs11(hsm), rollbackGuard: StateFileRollbackGuard.user)
        }
        if let keychainPath = settings.value(kekKeychain, "kek.keychain") {
            guard settings.value(kekPassphraseFile, "kek.passphrase.file") == nil else {
                throw ValidationError("give one of --kek-passphrase-file and --kek-keychain")
            }
            let tag = try settings.required(kekTag, "kek.tag", flag: "--kek-tag")
            let secret = UnlockSecret.password(
                try ServerFiles.passphrase(
                    try settings.required(
                        kekKeychainPassphraseFile, "kek.keychain.passphrase.file",
                        flag: "--kek-keychain-passphrase-file")))
            let keychain: FileKeychain
            if FileManager.default.fileExists(atPath: keychainPath) {
                keychain = try FileKeychain.open(path: keychainPath, secret: secret, rollbackGuard: nil)
            } else {
                guard creating else {
                    throw ValidationError(
                        FileManager.default.fileExists(atPath: path)
                            ? "there is no KEK keychain at \(keychainPath): coffer-server kek init makes it, once, for a new key server"
                            : Self.noRing(path))
                }
                keychain = try FileKeychain.create(path: keychainPath, secret: secret, rollbackGuard: nil)
            }
            if creating { _ = try keychain.getOrCreateKey(.symmetric256, tag: tag, label: "coffer-server KEK") }
            return KeyRingStore(
                path: path, secret: .keychainKEK(in: keychain, tag: tag),
                rollbackGuard: KeychainRollbackGuard(keychain: keychain))
        }
        let passphrase = try ServerFiles.passphrase(
            try settings.required(kekPassphraseFile, "kek.passphrase.file", flag: "--kek-passphrase-file"))
        // The passphrase ring is guarded as key rings are (the per-user
        // state file, outside DIR): an older kek.ckr put back would enable
        // again the KEK keys a rewrap disabled (security review 4, G11).
        return KeyRingStore(path: path, secret: .password(passphrase), rollbackGuard: StateFileRollbackGuard.user)
    }
}
#endif
