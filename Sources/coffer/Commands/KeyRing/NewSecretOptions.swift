import ArgumentParser
import Coffer
import CofferKeychain
import Foundation

/// The new secret of `keyring passwd`, `store passwd` and `store add-slot`:
/// a passphrase file, a KEK file (or a recovery key's text), a KEK kept in
/// a keychain (made when missing), the key server's current key, or (on a
/// terminal) a prompt, asked twice.
struct NewSecretOptions: ParsableArguments {
    @Option(help: "The new passphrase.") var newPassphraseFile: String?
    @Option(help: "A new 32-byte key-encryption key instead.") var newKEKFile: String?
    @Option(help: "Or a symmetric256 key in this keychain (made when missing), under --new-kek-tag.")
    var newKEKKeychain: String?
    @Option(help: "The new KEK's application tag in --new-kek-keychain.") var newKEKTag: String?
    @Option(help: "file or secret-service (with --new-kek-keychain).")
    var newKEKKeychainBackend: KeychainBackend = .file
    @Option(help: "That file keychain's passphrase.") var newKEKKeychainPassphraseFile: String?
    @Option(help: "That file keychain's 32-byte key file.") var newKEKKeychainKeyFile: String?
    @Flag(
        help:
            "The key server's current key (for --kek-server's server and purpose; what opens may be older)."
    )
    var newKEKServer = false
    @Option(help: "The KDF for the new passphrase: scrypt or pbkdf2.")
    var kdf = "scrypt"

    /// How many of the new secret's sources were given (0 or 1 is valid).
    var given: Int {
        [newPassphraseFile, newKEKFile, newKEKKeychain].compactMap({ $0 }).count + (newKEKServer ? 1 : 0)
    }

    func validate() throws {
        if given > 1 {
            throw ValidationError(
                "give one of --new-passphrase-file, --new-kek-file, --new-kek-keychain and --new-kek-server")
        }
        if (newKEKKeychain == nil) != (newKEKTag == nil) {
            throw ValidationError("--new-kek-keychain and --new-kek-tag go together")
        }
    }

    /// Refuses --new-kek-server without --kek-server (the CLI knows the
    /// server only from what opened the ring or store).
    func validate(with kek: KEKOptions, what: String) throws {
        if newKEKServer && !kek.server.given {
            throw ValidationError("--new-kek-server moves \(what) opened with --kek-server")
        }
    }

    /// The new secret; `prompt` is asked twice on a terminal when no source was given.
    func secret(_ kek: KEKOptions, prompt: String) async throws -> UnlockSecret {
        if newKEKServer, let current = try await kek.server.currentSecret() { return current }
        if let newKEKKeychain, let newKEKTag {
            let keychain = try KeychainOptions.open(
                name: newKEKKeychain, backend: newKEKKeychainBackend,
                passphraseFile: newKEKKeychainPassphraseFile, keyFile: newKEKKeychainKeyFile)
            return try KEKOptions.keychainKEK(keychain, name: newKEKKeychain, tag: newKEKTag, creating: true)
        }
        return try SecretSource.unlock(
            keyFile: newKEKFile, passphraseFile: newPassphraseFile, keyWhat: "the new KEK file", prompt: prompt,
            confirm: true)
    }

    var passwordKDF: PasswordKDF { get throws { try PasswordKDF.named(kdf) } }
}
