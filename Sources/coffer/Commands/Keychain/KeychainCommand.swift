import ArgumentParser
import Coffer
import CofferKeychain
import Crypto
import Foundation

extension KeychainKeyType: ExpressibleByArgument {}

/// Where a keychain lives.
enum KeychainBackend: String, ExpressibleByArgument, CaseIterable {
    /// FileKeychain: an encrypted file, unlocked with a passphrase or key file.
    case file
    /// SecretServiceKeychain: the desktop's keyring, unlocked by the session.
    case secretService = "secret-service"
}

/// Which keychain, and how to unlock it.
struct KeychainOptions: ParsableArguments {
    @Option(
        name: .customLong("keychain"),
        help: "The keychain's name (a file in $COFFER_KEYCHAIN_DIR, else $XDG_DATA_HOME/coffer/keychains).")
    var name = "default"

    @Option(
        help:
            "file (an encrypted file) or secret-service (GNOME Keyring or KWallet, in builds with the SecretService trait)."
    )
    var backend: KeychainBackend = .file

    @Option(help: "Read the keychain passphrase from this file.") var passphraseFile: String?

    @Option(help: "A 32-byte key file instead of a passphrase.") var keyFile: String?

    /// What the options name, for the code that opens it.
    var location: KeychainLocation {
        KeychainLocation(name: name, backend: backend, passphraseFile: passphraseFile, keyFile: keyFile)
    }

    func validate() throws { try location.validate() }
    func secret(confirm: Bool = false) throws -> UnlockSecret { try location.secret(confirm: confirm) }
    func open() throws -> any Keychain { try location.open() }
    func openFile() throws -> FileKeychain { try location.openFile() }

    /// The keychain that another command's options name (decrypt's
    /// --keychain…, the key ring's --kek-keychain…), opened as
    /// `coffer keychain` opens it.
    static func open(name: String, backend: KeychainBackend, passphraseFile: String?, keyFile: String?) throws
        -> any Keychain
    {
        let location = KeychainLocation(name: name, backend: backend, passphraseFile: passphraseFile, keyFile: keyFile)
        try location.validate()
        return try location.open()
    }
}

/// A keychain as the command line names it: which one, on which backend,
/// and how its secret is given. Resolved once, then opened.
struct KeychainLocation {
    var name: String
    var backend: KeychainBackend
    var passphraseFile: String?
    var keyFile: String?

    func validate() throws {
        if passphraseFile != nil && keyFile != nil {
            throw ValidationError("give --passphrase-file or --key-file, not both")
        }
        if backend == .secretService && (passphraseFile != nil || keyFile != nil) {
            throw ValidationError(
                "the Secret Service is unlocked by the desktop session, not by --passphrase-file or --key-file")
        }
    }

    func secret(confirm: Bool = false) throws -> UnlockSecret {
        try SecretSource.unlock(
            keyFile: keyFile, passphraseFile: passphraseFile, keyWhat: "the keychain key file",
            prompt: "Keychain passphrase", confirm: confirm)
    }

    /// The keychain, on either backend.
    func open() throws -> any Keychain {
        switch backend {
        case .file: return try openFile()
        case .secretService:
            #if SecretService
            return try SecretServiceKeychain(name: name)
            #else
            throw CLIFailure(
                "this coffer was built without the Secret Service: build with --traits SecretService (needs libsecret-1-dev)",
                status: 5)
            #endif
        }
    }

    /// The file keychain (for what only a file keychain does: create, passwd).
    func openFile() throws -> FileKeychain {
        guard backend == .file else {
            throw CLIFailure("only a file keychain has a passphrase; the Secret Service's is the session's", status: 64)
        }
        return try FileKeychain.open(path: try FileKeychain.path(named: name), secret: try secret())
    }
}

/// The secret value of a password item: from a file or standard input, never argv.
struct SecretInput: ParsableArguments {
    @Option(help: "Read the secret from this file (standard input when absent).") var secretFile: String?

    func read() throws -> SecretBytes {
        SecretBytes(try Input.readAll(path: secretFile ?? "-", what: "the secret"))
    }
}

struct KeychainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keychain",
        abstract:
            "Keep passwords and keys in a keychain (Apple's keychain model): an encrypted file, or the desktop's Secret Service.",
        discussion: """
            Password items are named by --service and --account, keys by --tag (and --type). \
            Secrets are read from standard input or --secret-file, never from the command line; \
            list never prints them. The key agreement commands (agree, encrypt-to, decrypt-from) \
            use a stored p256 or x25519 key, and rsa-decrypt a stored RSA key, without it leaving the keychain.
            """,
        subcommands: [
            KeychainCreate.self, KeychainList.self, KeychainAddIdentity.self, KeychainAddPassword.self,
            KeychainGetPassword.self,
            KeychainUpdatePassword.self, KeychainDelete.self, KeychainGenerateKey.self, KeychainPublicKey.self,
            KeychainRSADecrypt.self, KeychainAgree.self, KeychainEncryptTo.self, KeychainDecryptFrom.self,
            KeychainPasswd.self,
            KeychainAcceptRollback.self,
        ])
}
