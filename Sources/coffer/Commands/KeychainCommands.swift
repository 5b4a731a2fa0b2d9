import ArgumentParser
import Coffer
import CofferKeychain
import Crypto
import Foundation

extension KeychainKeyType: ExpressibleByArgument {}

/// Which file keychain, and how to unlock it.
struct KeychainOptions: ParsableArguments {
    @Option(name: .customLong("keychain"), help: "The keychain's name (a file in $COFFER_KEYCHAIN_DIR, else $XDG_DATA_HOME/coffer/keychains).")
    var name = "default"

    @Option(name: .customLong("passphrase-file"), help: "Read the keychain passphrase from this file.")
    var passphraseFile: String?

    @Option(name: .customLong("key-file"), help: "A 32-byte key file instead of a passphrase.")
    var keyFile: String?

    func validate() throws {
        if passphraseFile != nil && keyFile != nil { throw ValidationError("give --passphrase-file or --key-file, not both") }
    }

    func secret(confirm: Bool = false) throws -> FileKeychain.Secret {
        if let keyFile {
            let bytes = try Input.readAll(path: keyFile, what: "the key file")
            guard bytes.count == 32 else { throw CLIFailure("the key file \(keyFile) holds \(bytes.count) bytes; a keychain key file holds 32", status: 64) }
            return .keyFile(SymmetricKey(data: bytes))
        }
        if let passphraseFile { return .password(try Passphrase.read(file: passphraseFile)) }
        return .password(try Passphrase.prompt("Keychain passphrase", confirm: confirm))
    }

    func open() throws -> FileKeychain {
        try FileKeychain.open(path: try FileKeychain.path(named: name), secret: try secret())
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
        abstract: "Keep passwords and keys in an encrypted file keychain (Apple's keychain model).",
        discussion: """
            Password items are named by --service and --account, keys by --tag (and --type). \
            Secrets are read from standard input or --secret-file, never from the command line; \
            list never prints them.
            """,
        subcommands: [KeychainCreate.self, KeychainList.self, KeychainAddIdentity.self, KeychainAddPassword.self, KeychainGetPassword.self,
                      KeychainUpdatePassword.self, KeychainDelete.self, KeychainGenerateKey.self, KeychainPublicKey.self,
                      KeychainPasswd.self])
}

struct KeychainCreate: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "create", abstract: "Create an empty keychain (never overwrites).")
    @OptionGroup var keychain: KeychainOptions

    func run() throws {
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
        var items: [KeychainItem] = []
        for itemClass in ItemClass.allCases {
            items += (try? file.copyMatching(KeychainQuery(itemClass: itemClass))) ?? []
        }
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

struct KeychainPasswd: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "passwd", abstract: "Change the keychain's passphrase or key file (rewraps one slot).")
    @OptionGroup var keychain: KeychainOptions
    @Option(name: .customLong("new-passphrase-file"), help: "The new passphrase.")
    var newPassphraseFile: String?
    @Option(name: .customLong("new-key-file"), help: "A new 32-byte key file instead.")
    var newKeyFile: String?

    func run() throws {
        let secret: FileKeychain.Secret
        if let newKeyFile {
            let bytes = try Input.readAll(path: newKeyFile, what: "the new key file")
            guard bytes.count == 32 else { throw CLIFailure("a keychain key file holds 32 bytes", status: 64) }
            secret = .keyFile(SymmetricKey(data: bytes))
        } else if let newPassphraseFile {
            secret = .password(try Passphrase.read(file: newPassphraseFile))
        } else {
            secret = .password(try Passphrase.prompt("New keychain passphrase", confirm: true))
        }
        _ = try keychain.open().changeSecret(to: secret)
    }
}

/// age identities kept in a keychain: generic password items of service
/// `coffer.age-identity`, named by label (the account is the label too).
enum AgeIdentityItem {
    static let service = "coffer.age-identity"
    static func query(label: String) -> KeychainQuery { .password(service: service, account: label) }
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
        let bytes = try secret.read()
        _ = try AgeKeys.identities(fileBytes: bytes.revealed(), name: "the identity")  // refuse what would not decrypt anything
        try keychain.open().add(.password(service: AgeIdentityItem.service, account: label, label: label), data: bytes)
    }
}
