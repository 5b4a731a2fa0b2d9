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

    @Option(name: .customLong("kek-keychain"),
            help: "Use the symmetric256 key under --kek-tag in this keychain as the key-encryption key (keyring new makes it when missing).")
    var kekKeychain: String?

    @Option(name: .customLong("kek-tag"), help: "The KEK's application tag in --kek-keychain.")
    var kekTag: String?

    @Option(name: .customLong("kek-keychain-backend"), help: "file or secret-service (with --kek-keychain).")
    var kekKeychainBackend: KeychainBackend = .file

    @Option(name: .customLong("kek-keychain-passphrase-file"), help: "The file keychain's passphrase (with --kek-keychain).")
    var kekKeychainPassphraseFile: String?

    @Option(name: .customLong("kek-keychain-key-file"), help: "The file keychain's 32-byte key file (with --kek-keychain).")
    var kekKeychainKeyFile: String?

    func validate() throws {
        if [passphraseFile, kekFile, kekKeychain].compactMap({ $0 }).count > 1 {
            throw ValidationError("give one of --passphrase-file, --kek-file and --kek-keychain")
        }
        if (kekKeychain == nil) != (kekTag == nil) { throw ValidationError("--kek-keychain and --kek-tag go together") }
    }

    /// The key-encryption key kept in a keychain under `tag`, made first when
    /// `creating` and missing (keyring new, passwd --new-kek-keychain).
    static func keychainKEK(_ keychain: any Keychain, name: String, tag: String, creating: Bool) throws -> KeyRingFile.Secret {
        if creating { _ = try keychain.getOrCreateKey(.symmetric256, tag: tag, label: "coffer key ring KEK") }
        do { return .key(try keychain.exportSymmetricKey(tag: tag)) } catch let error as KeychainError where error.code == .itemNotFound {
            throw KeychainError(.itemNotFound, "the keychain \(name) holds no symmetric256 key tagged \(tag)")
        }
    }

    /// - Parameter creating: make the keychain KEK when it is missing (keyring new).
    func secret(confirm: Bool = false, creating: Bool = false) throws -> KeyRingFile.Secret {
        if let kekKeychain, let kekTag {
            let keychain = try KeychainOptions.open(name: kekKeychain, backend: kekKeychainBackend, passphraseFile: kekKeychainPassphraseFile,
                                                    keyFile: kekKeychainKeyFile)
            return try Self.keychainKEK(keychain, name: kekKeychain, tag: kekTag, creating: creating)
        }
        if let kekFile { return .key(try Input.readKey32(path: kekFile, what: "the KEK file")) }
        if let passphraseFile { return .password(try Passphrase.read(file: passphraseFile)) }
        return .password(try Passphrase.prompt("Key ring passphrase", confirm: confirm))
    }

    /// The store for this key ring: its high-water mark lives beside the
    /// KEK when the KEK is kept in a keychain, else in the per-user state file.
    func store(secret: KeyRingFile.Secret) throws -> KeyRingStore {
        if let kekKeychain {
            let keychain = try KeychainOptions.open(name: kekKeychain, backend: kekKeychainBackend, passphraseFile: kekKeychainPassphraseFile,
                                                    keyFile: kekKeychainKeyFile)
            return KeyRingStore(path: keyring, secret: secret, rollbackGuard: KeychainRollbackGuard(keychain: keychain))
        }
        return KeyRingStore(path: keyring, secret: secret)
    }

    func store() throws -> KeyRingStore { try store(secret: try secret()) }

    func unlockFile() throws -> KeyRingFile {
        let file = try store().read()
        warnIfWeak(file)
        return file
    }

    func warnIfWeak(_ file: KeyRingFile) {
        if file.upgradeDue {
            StandardError.write("coffer: warning: the key ring's passphrase uses \(file.kdf!.description), below today's default; run 'coffer keyring upgrade'\n")
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

struct KeyRingCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keyring",
        abstract: "Create and manage key rings: data keys sealed under a passphrase or a KEK file.",
        subcommands: [KeyRingNew.self, KeyRingRotate.self, KeyRingList.self, KeyRingDisable.self, KeyRingDestroy.self, KeyRingPasswd.self,
                      KeyRingUpgrade.self, KeyRingAcceptRollback.self])
}

struct KeyRingNew: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "new", abstract: "Create a key ring with one primary key (never overwrites).")
    @OptionGroup var unlock: KeyRingUnlock
    @Option(help: "The passphrase KDF: scrypt (default, N=2^17 r=8 p=1) or pbkdf2 (600,000 rounds of HMAC-SHA-256).")
    var kdf = "scrypt"

    func run() throws {
        let store = try unlock.store(secret: try unlock.secret(confirm: true, creating: true))
        let file = try store.create(KeyRing(), kdf: try PasswordKDF.named(kdf))
        StandardError.write("Created \(unlock.keyring): primary key \(String(format: "%08x", file.keyRing.primaryID))\n")
    }
}

struct KeyRingRotate: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rotate", abstract: "Add a new primary key; older keys stay active.")
    @OptionGroup var unlock: KeyRingUnlock

    func run() throws {
        var id: UInt32 = 0
        try unlock.modify { file in try file.update { id = try $0.rotate() } }
        print(String(format: "%08x", id))
    }
}

struct KeyRingList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List key ids, states and creation times (never key bytes).")
    @OptionGroup var unlock: KeyRingUnlock

    func run() throws {
        let file = try unlock.unlockFile()
        let formatter = ISO8601DateFormatter()
        for key in file.keyRing.keys {
            print("\(String(format: "%08x", key.id))  \(key.state.description.padding(toLength: 8, withPad: " ", startingAt: 0))  \(formatter.string(from: key.created))")
        }
        print("# protected by \(file.kdf?.description ?? "a 32-byte key-encryption key")")
    }
}

struct KeyRingDisable: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "disable", abstract: "Disable a key: values sealed under it no longer open.")
    @OptionGroup var unlock: KeyRingUnlock
    @Argument(help: "The key id (8 hex digits, as list prints it).")
    var id: String

    func run() throws {
        guard id.count <= 8, let value = UInt32(id, radix: 16) else { throw ValidationError("a key id is up to 8 hex digits") }
        try unlock.modify { file in try file.update { try $0.disable(value) } }
    }
}

struct KeyRingDestroy: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "destroy",
        abstract: "Remove a disabled key's bytes from the key ring: values sealed under it never open again.")
    @OptionGroup var unlock: KeyRingUnlock
    @Flag(name: .customLong("no-values-remain"), help: "State that every value sealed under the key was rewrapped or deleted.")
    var noValuesRemain = false
    @Flag(help: "Destroy the key even if values sealed under it may remain.")
    var force = false
    @Argument(help: "The key id (8 hex digits, as list prints it); the key must be disabled.")
    var id: String

    func run() throws {
        guard id.count <= 8, let value = UInt32(id, radix: 16) else { throw ValidationError("a key id is up to 8 hex digits") }
        do {
            try unlock.modify { file in try file.update { try $0.destroy(value, noValuesRemain: noValuesRemain, force: force) } }
        } catch let error as CofferError where error.code == .refused {
            throw CLIFailure(error.reason, hint: "rewrap the values (coffer rewrap), then pass --no-values-remain; or --force to lose them",
                             status: CLIFailure.refusedStatus)
        }
        StandardError.write("Destroyed key \(String(format: "%08x", value)); older copies of the ring still hold it, so delete those too\n")
    }
}

struct KeyRingAcceptRollback: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept-rollback",
        abstract: "Accept the key ring file as it is now, although older than one already written (a backup restored on purpose).")
    @OptionGroup var unlock: KeyRingUnlock

    func run() throws {
        let generation = try unlock.store().acceptCurrentGeneration()
        StandardError.write("Accepted \(unlock.keyring) at generation \(generation)\n")
    }
}

struct KeyRingPasswd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passwd",
        abstract: "Change the key ring's passphrase (or KEK) and add a new primary key; no value is re-encrypted.")
    @OptionGroup var unlock: KeyRingUnlock
    @Option(name: .customLong("new-passphrase-file"), help: "The new passphrase.")
    var newPassphraseFile: String?
    @Option(name: .customLong("new-kek-file"), help: "A new 32-byte key-encryption key instead.")
    var newKEKFile: String?
    @Option(name: .customLong("new-kek-keychain"), help: "Or a symmetric256 key in this keychain (made when missing), under --new-kek-tag.")
    var newKEKKeychain: String?
    @Option(name: .customLong("new-kek-tag"), help: "The new KEK's application tag in --new-kek-keychain.")
    var newKEKTag: String?
    @Option(name: .customLong("new-kek-keychain-backend"), help: "file or secret-service (with --new-kek-keychain).")
    var newKEKKeychainBackend: KeychainBackend = .file
    @Option(name: .customLong("new-kek-keychain-passphrase-file"), help: "That file keychain's passphrase.")
    var newKEKKeychainPassphraseFile: String?
    @Option(name: .customLong("new-kek-keychain-key-file"), help: "That file keychain's 32-byte key file.")
    var newKEKKeychainKeyFile: String?
    @Option(help: "The KDF for the new passphrase: scrypt or pbkdf2.")
    var kdf = "scrypt"

    func validate() throws {
        if [newPassphraseFile, newKEKFile, newKEKKeychain].compactMap({ $0 }).count > 1 {
            throw ValidationError("give one of --new-passphrase-file, --new-kek-file and --new-kek-keychain")
        }
        if (newKEKKeychain == nil) != (newKEKTag == nil) { throw ValidationError("--new-kek-keychain and --new-kek-tag go together") }
    }

    func run() throws {
        let secret: KeyRingFile.Secret
        if let newKEKKeychain, let newKEKTag {
            let keychain = try KeychainOptions.open(name: newKEKKeychain, backend: newKEKKeychainBackend,
                                                    passphraseFile: newKEKKeychainPassphraseFile, keyFile: newKEKKeychainKeyFile)
            secret = try KeyRingUnlock.keychainKEK(keychain, name: newKEKKeychain, tag: newKEKTag, creating: true)
        } else if let newKEKFile {
            secret = .key(try Input.readKey32(path: newKEKFile, what: "the new KEK file"))
        } else if let newPassphraseFile {
            secret = .password(try Passphrase.read(file: newPassphraseFile))
        } else {
            secret = .password(try Passphrase.prompt("New key ring passphrase", confirm: true))
        }
        let kdf = try PasswordKDF.named(kdf)
        let primary = try unlock.modify { file in try file.changeSecret(to: secret, kdf: kdf) }
        StandardError.write("New primary key \(String(format: "%08x", primary)); values sealed before stay under their keys until rewrapped\n")
    }
}

struct KeyRingUpgrade: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "upgrade", abstract: "Re-derive the passphrase key with today's default parameters.")
    @OptionGroup var unlock: KeyRingUnlock

    func run() throws {
        guard case .password(let password) = try unlock.secret() else {
            throw CLIFailure("a key ring locked with a KEK file has no passphrase parameters to upgrade", status: 64)
        }
        try unlock.modify { file in try file.upgrade(password: password) }
    }
}

struct SealOptions: ParsableArguments {
    @OptionGroup var unlock: KeyRingUnlock
    @Option(help: "Where the value belongs (e.g. notes/42/description): bound to it, not stored.")
    var context: String
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?
    @Argument(help: "The input; standard input when absent or \"-\".")
    var input: String?
}

struct Seal: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Seal a small value under the key ring's primary key (docs/sealed-values.md).")
    @OptionGroup var options: SealOptions
    @Flag(help: "Write the text form (cs1.… base64url) instead of binary.")
    var text = false

    func run() throws {
        let file = try options.unlock.unlockFile()
        let plaintext = try Input.readAll(path: options.input ?? "-", what: "the input")
        let sealed = try file.keyRing.seal(plaintext, context: Array(options.context.utf8))
        if text {
            try KeyFile.write(Array((SealedValue.text(sealed) + "\n").utf8), to: options.output, binary: false)
        } else {
            try KeyFile.write(sealed, to: options.output, binary: true)
        }
    }
}

struct Open: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Open a sealed value (binary or text form).")
    @OptionGroup var options: SealOptions

    func run() throws {
        let file = try options.unlock.unlockFile()
        let sealed = try SealedValue.binary(try Input.readAll(path: options.input ?? "-", what: "the input"))
        try KeyFile.write(try file.keyRing.open(sealed, context: Array(options.context.utf8)), to: options.output, binary: false)
    }
}

struct Rewrap: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-seal a value under the current primary key, without printing it; keeps its form.")
    @OptionGroup var options: SealOptions

    func run() throws {
        let file = try options.unlock.unlockFile()
        let input = try Input.readAll(path: options.input ?? "-", what: "the input")
        let rewrapped = try file.keyRing.rewrap(try SealedValue.binary(input), context: Array(options.context.utf8))
        if input.starts(with: Array(SealedValue.textPrefix.utf8)) {
            try KeyFile.write(Array((SealedValue.text(rewrapped) + "\n").utf8), to: options.output, binary: false)
        } else {
            try KeyFile.write(rewrapped, to: options.output, binary: true)
        }
    }
}
