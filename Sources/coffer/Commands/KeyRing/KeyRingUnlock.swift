import ArgumentParser
import Coffer
import CofferKeychain
import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension PasswordKDF {
    static func named(_ name: String) throws -> PasswordKDF {
        switch name {
        case "scrypt": .defaultScrypt
        case "pbkdf2": .defaultPBKDF2
        default: throw ValidationError("--kdf is scrypt or pbkdf2")
        }
    }
}

/// How a command unlocks a key ring: a passphrase file, a 32-byte KEK
/// file, a symmetric key kept in a keychain, or (on a terminal) a prompt.
struct KeyRingUnlock: ParsableArguments {
    @Option(name: .customLong("keyring"), help: "The key ring file.")
    var keyring: String

    @Option(name: .customLong("passphrase-file"), help: "Read the key ring's passphrase from this file.")
    var passphraseFile: String?

    @Option(name: .customLong("kek-file"), help: "A 32-byte key-encryption key file instead of a passphrase.")
    var kekFile: String?

    @Option(
        name: .customLong("kek-keychain"),
        help:
            "Use the symmetric256 key under --kek-tag in this keychain as the key-encryption key (keyring new makes it when missing)."
    )
    var kekKeychain: String?

    @Option(name: .customLong("kek-tag"), help: "The KEK's application tag in --kek-keychain.")
    var kekTag: String?

    @Option(name: .customLong("kek-keychain-backend"), help: "file or secret-service (with --kek-keychain).")
    var kekKeychainBackend: KeychainBackend = .file

    @Option(
        name: .customLong("kek-keychain-passphrase-file"), help: "The file keychain's passphrase (with --kek-keychain)."
    )
    var kekKeychainPassphraseFile: String?

    @Option(
        name: .customLong("kek-keychain-key-file"), help: "The file keychain's 32-byte key file (with --kek-keychain).")
    var kekKeychainKeyFile: String?

    @OptionGroup var server: ServerKEKOptions

    func validate() throws {
        if [passphraseFile, kekFile, kekKeychain, server.kekServer].compactMap({ $0 }).count > 1 {
            throw ValidationError("give one of --passphrase-file, --kek-file, --kek-keychain and --kek-server")
        }
        if (kekKeychain == nil) != (kekTag == nil) { throw ValidationError("--kek-keychain and --kek-tag go together") }
    }

    /// The key-encryption key kept in a keychain under `tag`, made first when
    /// `creating` and missing (keyring new, passwd --new-kek-keychain).
    static func keychainKEK(_ keychain: any Keychain, name: String, tag: String, creating: Bool) throws
        -> UnlockSecret
    {
        if creating {
            _ = try keychain.getOrCreateKey(.symmetric256, tag: tag, label: "coffer key ring KEK")
        } else {
            // Said now, with the keychain's name, rather than at the unlock.
            do { _ = try keychain.copyMatching(.key(tag: tag, type: .symmetric256)) } catch let error as KeychainError
                where error.code == .itemNotFound
            {
                throw KeychainError(.itemNotFound, "the keychain \(name) holds no symmetric256 key tagged \(tag)")
            }
        }
        return .keychainKEK(in: keychain, tag: tag)
    }

    /// The passphrase or KEK file (a KEK kept in a keychain comes with its
    /// store: ``store(confirm:creating:)``).
    private func secret(confirm: Bool) throws -> UnlockSecret {
        if let secret = try server.secret() { return secret }
        return try SecretSource.unlock(
            keyFile: kekFile, passphraseFile: passphraseFile, keyWhat: "the KEK file", prompt: "Key ring passphrase",
            confirm: confirm)
    }

    /// The store for this key ring, its secret resolved once. With a KEK
    /// kept in a keychain, the keychain is opened once and holds both the
    /// KEK and the ring's high-water mark; otherwise the mark lives in the
    /// per-user state file.
    /// - Parameters:
    ///   - confirm: ask for a new passphrase twice (keyring new).
    ///   - creating: make the keychain KEK when it is missing (keyring new).
    func store(confirm: Bool = false, creating: Bool = false) throws -> KeyRingStore {
        if let kekKeychain, let kekTag {
            let keychain = try KeychainOptions.open(
                name: kekKeychain, backend: kekKeychainBackend, passphraseFile: kekKeychainPassphraseFile,
                keyFile: kekKeychainKeyFile)
            let secret = try Self.keychainKEK(keychain, name: kekKeychain, tag: kekTag, creating: creating)
            return KeyRingStore(path: keyring, secret: secret, rollbackGuard: KeychainRollbackGuard(keychain: keychain))
        }
        if !creating,
            let secret = try server.open({ secret -> UnlockSecret in
                _ = try KeyRingStore(path: keyring, secret: secret).read()
                return secret
            })
        {
            return KeyRingStore(path: keyring, secret: secret)
        }
        return KeyRingStore(path: keyring, secret: try secret(confirm: confirm))
    }

    func unlockFile() throws -> KeyRingFile {
        let file = try store().read()
        warnIfWeak(file)
        return file
    }

    func warnIfWeak(_ file: KeyRingFile) {
        if file.upgradeDue {
            StandardError.write(
                "coffer: warning: the key ring's passphrase uses \(file.kdf!.description), below today's default; run 'coffer keyring upgrade'\n"
            )
        }
    }

    /// Read-modify-write under the key ring's lock (``KeyRingStore/modify(_:)``).
    @discardableResult
    func modify<T>(_ change: (inout KeyRingFile) throws -> T) throws -> T {
        try store().modify { file in
            warnIfWeak(file)
            return try change(&file)
        }
    }
}
