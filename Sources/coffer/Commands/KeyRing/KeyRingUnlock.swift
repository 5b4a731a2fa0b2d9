import ArgumentParser
import Coffer
import CofferKeychain
import CofferPKCS11
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

/// What unlocks a key ring or a store: a passphrase file, a 32-byte KEK
/// file, a symmetric key kept in a keychain, a key server's key, or (on a
/// terminal) a prompt. `coffer keyring` and `coffer store` take the same.
///
/// Every group of options sits directly in its command, this one beside
/// ``KeyRingUnlock`` or ``StoreOptions`` rather than inside them, and no
/// group holds another: swift-argument-parser 1.x checks each command's
/// groups in a debug build, and the check grows about five times for each
/// level of groups inside groups (1.26 s of `store rotate`'s parse at three
/// levels, 0.12 s at one). Groups that work with another take it as a
/// parameter instead (`store.open(kek)`).
struct KEKOptions: ParsableArguments {
    @Option(help: "Read the passphrase from this file.") var passphraseFile: String?

    @Option(help: "A 32-byte key-encryption key file (or a recovery key's text) instead of a passphrase.")
    var kekFile: String?

    @Option(
        name: .customLong("kek-keychain"),
        help:
            "Use the symmetric256 key under --kek-tag in this keychain as the key-encryption key (keyring new and store init make it when missing)."
    )
    var kekKeychain: String?

    @Option(help: "The KEK's application tag in --kek-keychain.") var kekTag: String?

    @Option(help: "file or secret-service (with --kek-keychain).") var kekKeychainBackend: KeychainBackend = .file

    @Option(help: "The file keychain's passphrase (with --kek-keychain).") var kekKeychainPassphraseFile: String?

    @Option(help: "The file keychain's 32-byte key file (with --kek-keychain).") var kekKeychainKeyFile: String?

    @Option(
        help: ArgumentHelp(
            "Unlock with your key from this Coffer key server (with --purpose, --token-file).", valueName: "URL"))
    var kekServer: String?

    @Option(help: "The purpose of the key server's key (with --kek-server).") var purpose: String?

    @Option(help: ArgumentHelp("Your sign-in token (a JWT), from this file (with --kek-server).", valueName: "F"))
    var tokenFile: String?

    @Option(
        help: ArgumentHelp(
            "Use this version of the server's key (default: the current one, then older ones to open).",
            valueName: "N"))
    var kekVersion: Int?

    @Option(
        help: ArgumentHelp(
            "Trust --kek-server's certificate only when this CA (PEM) issued it, in place of the system's roots.",
            valueName: "FILE"))
    var kekServerCAFile: String?

    @Option(
        help: ArgumentHelp(
            "Unlock with an AES key inside an HSM: its PKCS#11 module (with --kek-pkcs11-token, -key, -pin-file).",
            valueName: "PATH"))
    var kekPkcs11Module: String?

    @Option(help: ArgumentHelp("The PKCS#11 token's label.", valueName: "LABEL")) var kekPkcs11Token: String?

    @Option(
        help: ArgumentHelp(
            "The AES key's label in the token (keyring new and store init make it, unextractable).", valueName: "LABEL")
    )
    var kekPkcs11Key: String?

    @Option(help: ArgumentHelp("The token's user PIN, from this file.", valueName: "F")) var kekPkcs11PinFile: String?

    /// The --kek-server options, as one value.
    var server: ServerKEKOptions {
        ServerKEKOptions(
            kekServer: kekServer, purpose: purpose, tokenFile: tokenFile, kekVersion: kekVersion,
            caFile: kekServerCAFile)
    }

    func validate() throws {
        try server.validate()
        if [passphraseFile, kekFile, kekKeychain, kekServer, kekPkcs11Module].compactMap({ $0 }).count > 1 {
            throw ValidationError(
                "give one of --passphrase-file, --kek-file, --kek-keychain, --kek-server and --kek-pkcs11-module")
        }
        let hsmOptions = [kekPkcs11Module, kekPkcs11Token, kekPkcs11Key, kekPkcs11PinFile].compactMap { $0 }
        if !hsmOptions.isEmpty && hsmOptions.count < 4 {
            throw ValidationError(
                "--kek-pkcs11-module, --kek-pkcs11-token, --kek-pkcs11-key and --kek-pkcs11-pin-file go together")
        }
        if (kekKeychain == nil) != (kekTag == nil) { throw ValidationError("--kek-keychain and --kek-tag go together") }
    }

    /// The keychain that keeps the KEK, opened, with the KEK's secret
    /// (made first when `creating` and missing); nil without --kek-keychain.
    func keychain(creating: Bool) throws -> (keychain: any Keychain, secret: UnlockSecret)? {
        guard let kekKeychain, let kekTag else { return nil }
        let keychain = try KeychainOptions.open(
            name: kekKeychain, backend: kekKeychainBackend, passphraseFile: kekKeychainPassphraseFile,
            keyFile: kekKeychainKeyFile)
        return (keychain, try Self.keychainKEK(keychain, name: kekKeychain, tag: kekTag, creating: creating))
    }

    /// The key server's key, the KEK file or the passphrase (asked for
    /// with `prompt` on a terminal); not a keychain's KEK.
    func secret(confirm: Bool, prompt: String) async throws -> UnlockSecret {
        if let secret = try await server.secret() { return secret }
        return try localSecret(confirm: confirm, prompt: prompt)
    }

    /// The secret from a KEK file, a passphrase file or the terminal: what
    /// ``secret(confirm:prompt:)`` gives without a key server.
    func localSecret(confirm: Bool, prompt: String) throws -> UnlockSecret {
        if let held = try hsm(creating: false) { return held }
        return try SecretSource.unlock(
            keyFile: kekFile, passphraseFile: passphraseFile, keyWhat: "the KEK file", prompt: prompt, confirm: confirm)
    }

    /// The AES key inside a PKCS#11 token (docs/key-slots.md, kind 3), made
    /// there first when `creating` and missing; nil without --kek-pkcs11-module.
    func hsm(creating: Bool) throws -> UnlockSecret? {
        guard let kekPkcs11Module, let kekPkcs11Token, let kekPkcs11Key, let kekPkcs11PinFile else { return nil }
        var pin = Array(try Input.readAll(path: kekPkcs11PinFile, what: "the PIN file", secret: true))
        if pin.last == 0x0A { pin.removeLast() }
        if pin.last == 0x0D { pin.removeLast() }
        guard !pin.isEmpty else { throw ValidationError("the PIN file \(kekPkcs11PinFile) is empty") }
        let key = PKCS11Key(
            module: kekPkcs11Module, token: kekPkcs11Token, label: kekPkcs11Key, pin: SecretBytes(pin))
        if try key.prepare(creating: creating) {
            StandardError.write("coffer: made \(key) (sensitive, not extractable)\n")
        }
        return .pkcs11(key)
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
}

/// How a command unlocks a key ring: the ring's file, and what opens it
/// (``KEKOptions``, beside this group in each command; see there why).
struct KeyRingUnlock: ParsableArguments {
    @Option(help: "The key ring file.") var keyring: String

    /// The store for this key ring, its secret resolved once. With a KEK
    /// kept in a keychain, the keychain is opened once and holds both the
    /// KEK and the ring's high-water mark; otherwise the mark lives in the
    /// per-user state file.
    /// - Parameters:
    ///   - kek: what opens the ring.
    ///   - confirm: ask for a new passphrase twice (keyring new).
    ///   - creating: make the keychain KEK when it is missing (keyring new).
    func store(_ kek: KEKOptions, confirm: Bool = false, creating: Bool = false) async throws -> KeyRingStore {
        if let held = try kek.hsm(creating: creating) { return KeyRingStore(path: keyring, secret: held) }
        if let (keychain, secret) = try kek.keychain(creating: creating) {
            return KeyRingStore(path: keyring, secret: secret, rollbackGuard: KeychainRollbackGuard(keychain: keychain))
        }
        if !creating,
            let secret = try await kek.server.open({ secret -> UnlockSecret in
                _ = try KeyRingStore(path: keyring, secret: secret).read()
                return secret
            })
        {
            return KeyRingStore(path: keyring, secret: secret)
        }
        return await KeyRingStore(
            path: keyring, secret: try kek.secret(confirm: confirm, prompt: "Key ring passphrase"))
    }

    func unlockFile(_ kek: KEKOptions) async throws -> KeyRingFile {
        let file = try await store(kek).read()
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
    func modify<T>(_ kek: KEKOptions, _ change: (inout KeyRingFile) throws -> T) async throws -> T {
        // KeyRingStore's own modify, not its async form (which runs off this task).
        func modify(_ store: KeyRingStore) throws -> T {
            try store.modify { file in
                warnIfWeak(file)
                return try change(&file)
            }
        }
        return try modify(try await store(kek))
    }
}
