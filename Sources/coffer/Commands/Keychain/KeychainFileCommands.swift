import ArgumentParser
import Coffer
import CofferKeychain
import Crypto
import Foundation

struct KeychainCreate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Create an empty keychain (never overwrites).")
    @OptionGroup var keychain: KeychainOptions

    func run() throws {
        guard keychain.backend == .file else {
            throw CLIFailure("a Secret Service keychain needs no create: its first item makes it", status: 64)
        }
        let path = try FileKeychain.path(named: keychain.name)
        _ = try FileKeychain.create(path: path, secret: try keychain.secret(confirm: true))
        StandardError.write("Created \(path)\n")
    }
}

struct KeychainList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List items' attributes (never secrets).")
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
            case .genericPassword:
                print(
                    "password  service=\(item.service ?? "")  account=\(item.account ?? "")"
                        + (item.label.map { "  label=\($0)" } ?? ""))
            case .key:
                print(
                    "key       tag=\(item.applicationTag ?? "")  type=\(item.keyType?.rawValue ?? "")"
                        + (item.label.map { "  label=\($0)" } ?? ""))
            }
        }
    }
}

struct KeychainAcceptRollback: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept-rollback",
        abstract:
            "Accept the keychain file as it is now, although older than one already written (a backup restored on purpose)."
    )
    @OptionGroup var keychain: KeychainOptions

    func run() throws {
        guard keychain.backend == .file else {
            throw CLIFailure("only a file keychain has a rollback mark", status: 64)
        }
        let path = try FileKeychain.path(named: keychain.name)
        let generation = try FileKeychain.acceptCurrentGeneration(path: path, secret: try keychain.secret())
        StandardError.write("Accepted \(path) at generation \(generation)\n")
    }
}

struct KeychainPasswd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passwd",
        abstract: "Change the keychain's passphrase or key file; the items are re-sealed under a new data key.")
    @OptionGroup var keychain: KeychainOptions
    @Option(help: "The new passphrase.") var newPassphraseFile: String?
    @Option(help: "A new 32-byte key file instead.") var newKeyFile: String?

    func run() throws {
        let secret = try SecretSource.unlock(
            keyFile: newKeyFile, passphraseFile: newPassphraseFile, keyWhat: "the new keychain key file",
            prompt: "New keychain passphrase", confirm: true)
        _ = try keychain.openFile().changeSecret(to: secret)
    }
}
