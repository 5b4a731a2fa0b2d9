import ArgumentParser
import Coffer
import CofferKeychain
import Crypto
import Foundation

struct PasswordName: ParsableArguments {
    @Option(help: "The service.")
    var service: String
    @Option(help: "The account.")
    var account: String
}

struct KeychainAddPassword: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-password", abstract: "Add a password item; fails if it exists.")
    @OptionGroup var keychain: KeychainOptions
    @OptionGroup var name: PasswordName
    @Option(help: "A label.")
    var label: String?
    @Option(help: "A comment.")
    var comment: String?
    @OptionGroup var secret: SecretInput

    func run() throws {
        let file = try keychain.open()
        try file.add(
            .password(service: name.service, account: name.account, label: label, comment: comment),
            data: try secret.read())
    }
}

struct KeychainGetPassword: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get-password", abstract: "Print a password item's secret to standard output.")
    @OptionGroup var keychain: KeychainOptions
    @OptionGroup var name: PasswordName

    func run() throws {
        let value = try keychain.open().copyData(.password(service: name.service, account: name.account))
        var sink = FileDescriptorSink(fileDescriptor: 1)
        try sink.write(value.revealed())
    }
}

struct KeychainUpdatePassword: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update-password", abstract: "Replace a password item's secret.")
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
        if (service == nil) == (tag == nil) {
            throw ValidationError("name password items with --service [--account] or keys with --tag [--type]")
        }
    }

    func run() throws {
        let query: KeychainQuery =
            service != nil ? .password(service: service, account: account) : .key(tag: tag, type: type)
        try keychain.open().delete(query)
    }
}

struct KeychainAddIdentity: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-identity",
        abstract:
            "Keep an age identity (AGE-SECRET-KEY-… lines or a private key file) under a label; coffer decrypt --keychain uses it."
    )
    @OptionGroup var keychain: KeychainOptions
    @Option(help: "The label decrypt --identity names.")
    var label: String
    @OptionGroup var secret: SecretInput

    func run() throws {
        try keychain.open().addAgeIdentity(try secret.read(), label: label)
    }
}
