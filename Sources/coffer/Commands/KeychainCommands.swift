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
    @Option(name: .customLong("keychain"), help: "The keychain's name (a file in $COFFER_KEYCHAIN_DIR, else $XDG_DATA_HOME/coffer/keychains).")
    var name = "default"

    @Option(help: "file (an encrypted file) or secret-service (GNOME Keyring or KWallet, in builds with the SecretService trait).")
    var backend: KeychainBackend = .file

    @Option(name: .customLong("passphrase-file"), help: "Read the keychain passphrase from this file.")
    var passphraseFile: String?

    @Option(name: .customLong("key-file"), help: "A 32-byte key file instead of a passphrase.")
    var keyFile: String?

    func validate() throws {
        if passphraseFile != nil && keyFile != nil { throw ValidationError("give --passphrase-file or --key-file, not both") }
        if backend == .secretService && (passphraseFile != nil || keyFile != nil) {
            throw ValidationError("the Secret Service is unlocked by the desktop session, not by --passphrase-file or --key-file")
        }
    }

    func secret(confirm: Bool = false) throws -> FileKeychain.Secret {
        if let keyFile { return .keyFile(try Input.readKey32(path: keyFile, what: "the keychain key file")) }
        if let passphraseFile { return .password(try Passphrase.read(file: passphraseFile)) }
        return .password(try Passphrase.prompt("Keychain passphrase", confirm: confirm))
    }

    /// The keychain that another command's options name (decrypt's
    /// --keychain…, the key ring's --kek-keychain…), opened as
    /// `coffer keychain` opens it.
    static func open(name: String, backend: KeychainBackend, passphraseFile: String?, keyFile: String?) throws -> any Keychain {
        var arguments = ["--keychain", name, "--backend", backend.rawValue]
        if let passphraseFile { arguments += ["--passphrase-file", passphraseFile] }
        if let keyFile { arguments += ["--key-file", keyFile] }
        return try parse(arguments).open()
    }

    /// The keychain, on either backend.
    func open() throws -> any Keychain {
        switch backend {
        case .file: return try openFile()
        case .secretService:
            #if SecretService
            return try SecretServiceKeychain(name: name)
            #else
            throw CLIFailure("this coffer was built without the Secret Service: build with --traits SecretService (needs libsecret-1-dev)", status: 5)
            #endif
        }
    }

    /// The file keychain (for what only a file keychain does: create, passwd).
    func openFile() throws -> FileKeychain {
        guard backend == .file else { throw CLIFailure("only a file keychain has a passphrase; the Secret Service's is the session's", status: 64) }
        return try FileKeychain.open(path: try FileKeychain.path(named: name), secret: try secret())
    }
}

/// The secret value of a password item: from a file or standard input, never argv.
struct SecretInput: ParsableArguments {
    @Option(name: .customLong("secret-file"), help: "Read the secret from this file (standard input when absent).")
    var secretFile: String?

    func read() throws -> SecretBytes {
        SecretBytes(try Input.readAll(path: secretFile ?? "-", what: "the secret"))
    }
}

struct KeychainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keychain",
        abstract: "Keep passwords and keys in a keychain (Apple's keychain model): an encrypted file, or the desktop's Secret Service.",
        discussion: """
            Password items are named by --service and --account, keys by --tag (and --type). \
            Secrets are read from standard input or --secret-file, never from the command line; \
            list never prints them. The key agreement commands (agree, encrypt-to, decrypt-from) \
            use a stored p256 or x25519 key, and rsa-decrypt a stored RSA key, without it leaving the keychain.
            """,
        subcommands: [KeychainCreate.self, KeychainList.self, KeychainAddIdentity.self, KeychainAddPassword.self, KeychainGetPassword.self,
                      KeychainUpdatePassword.self, KeychainDelete.self, KeychainGenerateKey.self, KeychainPublicKey.self,
                      KeychainRSADecrypt.self, KeychainAgree.self, KeychainEncryptTo.self, KeychainDecryptFrom.self, KeychainPasswd.self,
                      KeychainAcceptRollback.self])
}

struct KeychainCreate: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "create", abstract: "Create an empty keychain (never overwrites).")
    @OptionGroup var keychain: KeychainOptions

    func run() throws {
        guard keychain.backend == .file else { throw CLIFailure("a Secret Service keychain needs no create: its first item makes it", status: 64) }
        let path = try FileKeychain.path(named: keychain.name)
        _ = try FileKeychain.create(path: path, secret: try keychain.secret(confirm: true))
        StandardError.write("Created \(path)\n")
    }
}

struct KeychainList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List items' attributes (never secrets).")
    @OptionGroup var keychain: KeychainOptions
    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let file = try keychain.open()
        let items = try file.allItems()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            print(String(decoding: try encoder.encode(items), as: UTF8.self))
            return
        }
        for item in items {
            switch item.itemClass {
            case .genericPassword: print("password  service=\(item.service ?? "")  account=\(item.account ?? "")" + (item.label.map { "  label=\($0)" } ?? ""))
            case .key: print("key       tag=\(item.applicationTag ?? "")  type=\(item.keyType?.rawValue ?? "")" + (item.label.map { "  label=\($0)" } ?? ""))
            }
        }
    }
}

struct PasswordName: ParsableArguments {
    @Option(help: "The service.")
    var service: String
    @Option(help: "The account.")
    var account: String
}

struct KeychainAddPassword: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add-password", abstract: "Add a password item; fails if it exists.")
    @OptionGroup var keychain: KeychainOptions
    @OptionGroup var name: PasswordName
    @Option(help: "A label.")
    var label: String?
    @Option(help: "A comment.")
    var comment: String?
    @OptionGroup var secret: SecretInput

    func run() throws {
        let file = try keychain.open()
        try file.add(.password(service: name.service, account: name.account, label: label, comment: comment), data: try secret.read())
    }
}

struct KeychainGetPassword: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get-password", abstract: "Print a password item's secret to standard output.")
    @OptionGroup var keychain: KeychainOptions
    @OptionGroup var name: PasswordName

    func run() throws {
        let value = try keychain.open().copyData(.password(service: name.service, account: name.account))
        var sink = FileDescriptorSink(fileDescriptor: 1)
        try sink.write(value.revealed())
    }
}

struct KeychainUpdatePassword: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "update-password", abstract: "Replace a password item's secret.")
    @OptionGroup var keychain: KeychainOptions
    @OptionGroup var name: PasswordName
    @OptionGroup var secret: SecretInput

    func run() throws {
        try keychain.open().update(.password(service: name.service, account: name.account), data: try secret.read())
    }
}

struct KeychainDelete: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete every matching item.")
    @OptionGroup var keychain: KeychainOptions
    @Option(help: "Password items of this service.")
    var service: String?
    @Option(help: "…and this account.")
    var account: String?
    @Option(help: "Keys with this tag.")
    var tag: String?
    @Option(help: "…and this type.")
    var type: KeychainKeyType?

    func validate() throws {
        if (service == nil) == (tag == nil) { throw ValidationError("name password items with --service [--account] or keys with --tag [--type]") }
    }

    func run() throws {
        let query: KeychainQuery = service != nil ? .password(service: service, account: account) : .key(tag: tag, type: type)
        try keychain.open().delete(query)
    }
}

struct KeychainGenerateKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate-key",
        abstract: "Generate a key into the keychain and print its public key (SPKI PEM).")
    @OptionGroup var keychain: KeychainOptions
    @Option(help: "The application tag.")
    var tag: String
    @Option(help: "p256, x25519, rsa2048, rsa3072, rsa4096 or symmetric256.")
    var type: KeychainKeyType
    @Option(help: "A label.")
    var label: String?
    @Flag(name: .customLong("if-missing"), help: "Return the existing key instead of failing when the tag is taken (get or create).")
    var ifMissing = false

    func run() throws {
        let file = try keychain.open()
        let publicKey = ifMissing ? try file.getOrCreateKey(type, tag: tag, label: label) : try file.generateKey(type, tag: tag, label: label)
        if let publicKey { print(String(decoding: try KeyFiles.encode(publicKey, as: .spki), as: UTF8.self), terminator: "") }
    }
}

struct KeychainPublicKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "public-key", abstract: "Write a stored key's public key.", aliases: ["export-public"])
    @OptionGroup var keychain: KeychainOptions
    @Option(help: "The application tag.")
    var tag: String
    @Option(help: "The key type.")
    var type: KeychainKeyType
    @Option(help: "spki (PEM), openssh or apple (SecKey's external representation).")
    var format: KeyFiles.Format = .spki
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?

    func run() throws {
        let publicKey = try keychain.open().publicKey(tag: tag, type: type)
        try KeyFile.write(try KeyFiles.encode(publicKey, as: format), to: output, binary: format == .apple)
    }
}

struct KeychainAcceptRollback: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept-rollback",
        abstract: "Accept the keychain file as it is now, although older than one already written (a backup restored on purpose).")
    @OptionGroup var keychain: KeychainOptions

    func run() throws {
        guard keychain.backend == .file else { throw CLIFailure("only a file keychain has a rollback mark", status: 64) }
        let path = try FileKeychain.path(named: keychain.name)
        let generation = try FileKeychain.acceptCurrentGeneration(path: path, secret: try keychain.secret())
        StandardError.write("Accepted \(path) at generation \(generation)\n")
    }
}

struct KeychainPasswd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passwd", abstract: "Change the keychain's passphrase or key file; the items are re-sealed under a new data key.")
    @OptionGroup var keychain: KeychainOptions
    @Option(name: .customLong("new-passphrase-file"), help: "The new passphrase.")
    var newPassphraseFile: String?
    @Option(name: .customLong("new-key-file"), help: "A new 32-byte key file instead.")
    var newKeyFile: String?

    func run() throws {
        let secret: FileKeychain.Secret
        if let newKeyFile {
            secret = .keyFile(try Input.readKey32(path: newKeyFile, what: "the new keychain key file"))
        } else if let newPassphraseFile {
            secret = .password(try Passphrase.read(file: newPassphraseFile))
        } else {
            secret = .password(try Passphrase.prompt("New keychain passphrase", confirm: true))
        }
        _ = try keychain.openFile().changeSecret(to: secret)
    }
}

struct KeychainAddIdentity: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-identity",
        abstract: "Keep an age identity (AGE-SECRET-KEY-… lines or a private key file) under a label; coffer decrypt --keychain uses it.")
    @OptionGroup var keychain: KeychainOptions
    @Option(help: "The label decrypt --identity names.")
    var label: String
    @OptionGroup var secret: SecretInput

    func run() throws {
        try keychain.open().addAgeIdentity(try secret.read(), label: label)
    }
}

/// A stored agreement key, the peer's public key and the KDF: what the
/// keychain key agreement commands share.
struct KeychainAgreement: ParsableArguments {
    @Option(help: "The application tag of your p256 or x25519 key.")
    var tag: String

    @Option(help: "p256 or x25519.")
    var type: KeychainKeyType = .p256

    @Option(name: .customLong("peer"), help: "The other side's public key file.")
    var peer: String

    @Option(help: "x963-sha256, x963-sha1, x963-sha384, x963-sha512 or hkdf-sha256.")
    var kdf: KeyAgreement.KDF = .x963SHA256

    @Option(name: .customLong("shared-info-file"), help: "A file whose bytes are the KDF's shared info.")
    var sharedInfoFile: String?

    func validate() throws {
        if type != .p256 && type != .x25519 { throw ValidationError("key agreement uses a p256 or x25519 key") }
    }

    func derive(_ keychain: any Keychain, size: Int) throws -> SymmetricKey {
        let sharedInfo = try sharedInfoFile.map { try Input.readAll(path: $0, what: "the shared info file") } ?? []
        return try keychain.agree(tag: tag, type: type, peer: try KeyFile.publicKey(peer), kdf: kdf, size: size, sharedInfo: sharedInfo)
    }
}

struct KeychainAgree: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agree",
        abstract: "Derive a key by ECDH between a stored key and a peer's public key, then a KDF (as coffer agree).",
        discussion: "The key is printed in hex; --raw -o FILE writes its bytes instead.")
    @OptionGroup var keychain: KeychainOptions
    @OptionGroup var agreement: KeychainAgreement
    @Option(help: "Bytes to derive.")
    var size: Int = 32
    @Flag(help: "Write the derived bytes, not hex (needs -o).")
    var raw = false
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file.")
    var output: String?

    func validate() throws {
        if raw && (output == nil || output == "-") { throw ValidationError("--raw writes binary: give -o FILE") }
    }

    func run() throws {
        let bytes = try agreement.derive(try keychain.open(), size: size).withUnsafeBytes { Array($0) }
        try KeyFile.writeDerivedKey(bytes, raw: raw, to: output)
    }
}

struct KeychainEncryptTo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encrypt-to",
        abstract: "Encrypt standard input for a peer: AES-256-GCM under the key ECDH and the KDF derive.",
        discussion: """
            Writes nonce (12) ‖ ciphertext ‖ tag (16), CryptoKit's AES.GCM.SealedBox.combined, \
            base64 with --base64. The peer decrypts with decrypt-from, its key and your public key, \
            and the same shared info.
            """)
    @OptionGroup var keychain: KeychainOptions
    @OptionGroup var agreement: KeychainAgreement
    @Flag(help: "Write base64 text instead of bytes.")
    var base64 = false
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?

    func run() throws {
        let key = try agreement.derive(try keychain.open(), size: 32)
        let sealed = try KeyAgreement.Box.seal(try Input.readAll(path: "-", what: "the message"), using: key)
        let bytes = base64 ? Array((Data(sealed).base64EncodedString() + "\n").utf8) : Array(sealed)
        try KeyFile.write(bytes, to: output, binary: !base64)
    }
}

struct KeychainDecryptFrom: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt-from",
        abstract: "Decrypt what encrypt-to wrote (standard input), with your stored key and the sender's public key.")
    @OptionGroup var keychain: KeychainOptions
    @OptionGroup var agreement: KeychainAgreement
    @Flag(help: "Read base64 text instead of bytes.")
    var base64 = false
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?

    func run() throws {
        let key = try agreement.derive(try keychain.open(), size: 32)
        var input = try Input.readAll(path: "-", what: "the ciphertext")
        if base64 {
            guard let decoded = Data(base64Encoded: String(decoding: input, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw CLIFailure("the input is not base64", status: 4)
            }
            input = Array(decoded)
        }
        let plaintext = try KeyAgreement.Box.open(input, using: key)
        try KeyFile.write(Array(plaintext), to: output, binary: true)
    }
}

struct KeychainRSADecrypt: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rsa-decrypt",
        abstract: "Decrypt an RSA-OAEP message (coffer rsa encrypt, SecKeyCreateEncryptedData) with a stored RSA key.")
    @OptionGroup var keychain: KeychainOptions
    @Option(help: "The application tag.")
    var tag: String
    @Option(help: "rsa2048, rsa3072 or rsa4096.")
    var type: KeychainKeyType = .rsa2048
    @Option(help: "OAEP's hash: sha256, or sha1 for older peers.")
    var hash: RSAEncryption.Hash = .sha256
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?
    @Argument(help: "The input file; standard input when absent or \"-\".")
    var input: String?

    func run() throws {
        let ciphertext = try Input.readAll(path: input ?? "-", what: "the ciphertext")
        let plaintext = try keychain.open().rsaDecrypt(ciphertext, tag: tag, type: type, hash: hash)
        try KeyFile.write(plaintext.revealed(), to: output, binary: false)
    }
}
