import ArgumentParser
import Coffer
import CofferKeychain
import Foundation

@main
struct CofferCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coffer",
        abstract: "Encrypt files with age v1, and manage the keys that open them.",
        discussion: """
            Files are age v1 (c2sp.org/age): what coffer writes opens with age and rage, \
            and the other way round. Exit status: 0 success, 1 I/O or other failure, \
            2 no identity matched or wrong passphrase, 3 damaged or tampered data, \
            4 malformed input, 5 unsupported version or parameter, 6 refused \
            (binary to a terminal, existing file), 64 usage.
            """,
        version: CofferVersion.string,
        // In sections by job (the names are unchanged; `coffer help` lists them so).
        subcommands: [Tour.self],
        groupedSubcommands: [
            CommandGroup(
                name: "Files (age v1)",
                subcommands: [Keygen.self, Encrypt.self, Decrypt.self, Rekey.self, Inspect.self]),
            CommandGroup(
                name: "Small values and records",
                subcommands: [KeyRingCommand.self, Seal.self, Open.self, Rewrap.self, StoreCommand.self]),
            CommandGroup(name: "Keys kept for you", subcommands: [KeychainCommand.self, ServerKeyCommand.self]),
            CommandGroup(
                name: "What apps already wrote",
                subcommands: [
                    Apple.self, RNCryptorCommand.self, Legacy.self, CryptoKitCommand.self, Convert.self,
                ]),
            CommandGroup(
                name: "Keys and primitives",
                subcommands: [
                    Key.self, Hash.self, Hmac.self, RSA.self, Agree.self, Sign.self, Verify.self,
                ]),
        ]
    )

    /// Maps every failure to one `coffer: error:` line, an optional
    /// `coffer: hint:` line and a documented exit status.
    /// Commands that wait for a key server or a store's changes are async
    /// (`AsyncParsableCommand`) and run on the concurrency pool; the rest
    /// run as they are.
    static func main() async {
        // Keys and passphrases pass through this process: never into a core file.
        ProcessHardening.disableCoreDumps()
        var parsed: (any ParsableCommand)?
        do {
            var command = try parseAsRoot()
            parsed = command
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let error as CofferError {
            StandardError.report(error.description, hint: ExitStatus.hint(for: error, in: parsed))
            Foundation.exit(ExitStatus.of(error))
        } catch let error as KeychainError {
            StandardError.report(error.description, hint: ExitStatus.hint(for: error))
            Foundation.exit(ExitStatus.of(error))
        } catch let failure as CLIFailure {
            StandardError.report(failure.message, hint: failure.hint)
            Foundation.exit(failure.status)
        } catch {
            // Help and version are "errors" that exit 0: let ArgumentParser print them.
            let status = exitCode(for: error)
            if status == .success { exit(withError: error) }
            StandardError.report(message(for: error), hint: "run 'coffer help' or 'coffer <command> --help' for usage")
            Foundation.exit(status.rawValue)
        }
    }
}

/// -r and -R, shared by encrypt and rekey.
struct RecipientOptions: ParsableArguments {
    @Option(
        name: [.customShort("r"), .customLong("recipient")], help: "Encrypt to this recipient (age1…). Repeatable.")
    var recipients: [String] = []

    @Option(
        name: [.customShort("R"), .customLong("recipients-file")],
        help: "Encrypt to the recipients listed in this file. Repeatable.")
    var recipientFiles: [String] = []

    var isEmpty: Bool { recipients.isEmpty && recipientFiles.isEmpty }

    func resolve() throws -> [any Recipient] {
        var result = try recipients.map(AgeKeys.recipient)
        for path in recipientFiles {
            let contents = String(decoding: try Input.readAll(path: path, what: "the recipients file"), as: UTF8.self)
            result += try AgeKeys.recipients(fileContents: contents, name: path)
        }
        return result
    }
}

/// -i, shared by decrypt and rekey.
func loadIdentities(_ paths: [String]) throws -> [any Identity] {
    try paths.flatMap { path in
        try AgeKeys.identities(
            fileBytes: try Input.readAll(path: path, what: "the identity file", secret: true), name: path)
    }
}
