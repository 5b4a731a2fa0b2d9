import ArgumentParser
import Coffer

struct Encrypt: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Encrypt a file to recipients or with a passphrase.",
        discussion: "Reads INPUT (or standard input) and writes the age file to -o (or standard output).")

    @OptionGroup var recipientOptions: RecipientOptions

    @Flag(
        name: [.customShort("p"), .customLong("passphrase")],
        help: "Encrypt with a passphrase (asked twice on the terminal).")
    var passphrase = false

    @Option(help: "Read the passphrase from this file (a path or /dev/fd/N) instead of the terminal.")
    var passphraseFile: String?

    @Flag(name: [.customShort("a"), .customLong("armor")], help: "Write ASCII armor (PEM) instead of binary.")
    var armor = false

    @Option(
        name: [.customShort("o"), .customLong("output")],
        help: "Write to this file; it appears only when encryption succeeds.")
    var output: String?

    @Argument(help: "The file to encrypt; standard input when absent or \"-\".")
    var input: String?

    func validate() throws {
        let usesPassphrase = passphrase || passphraseFile != nil
        if usesPassphrase && !recipientOptions.isEmpty {
            throw ValidationError(
                "-p/--passphrase-file cannot be combined with -r/-R: a passphrase must be the only recipient")
        }
        if !usesPassphrase && recipientOptions.isEmpty {
            throw ValidationError("missing recipients: give -r RECIPIENT, -R FILE, or -p for a passphrase")
        }
    }

    func run() throws {
        let recipients: [any Recipient]
        if passphrase || passphraseFile != nil {
            let secret =
                try passphraseFile.map(Passphrase.read(file:)) ?? Passphrase.prompt("Enter passphrase: ", confirm: true)
            recipients = [try Scrypt.Recipient(passphrase: secret)]
        } else {
            recipients = try recipientOptions.resolve()
        }
        let input = try Input(path: input)
        defer { input.finish() }
        let destination = try Output(path: output, binary: !armor, hint: "did you mean to use -a/--armor, or -o FILE?")
        let bar = ProgressBar.make(total: input.size)
        defer { bar?.finish() }
        try destination.write { sink in
            var source = input.source
            try Age.encrypt(
                from: &source, to: &sink, recipients: recipients, armored: armor,
                progress: bar.map { bar in { bar.update($0) } })
        }
    }
}
