import ArgumentParser
import Coffer

struct Rekey: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Give an age file new recipients without re-encrypting its payload.",
        discussion: """
            Opens the header with -i, writes a new header for the -r/-R recipients, and \
            copies the payload bytes unchanged after authenticating them. The file key is \
            kept: someone who could read the old file and kept its file key can read the \
            new one. To revoke access, decrypt and encrypt anew.
            """)

    @Option(
        name: [.customShort("i"), .customLong("identity")], help: "An identity file that opens the input. Repeatable.")
    var identityFiles: [String] = []

    @OptionGroup var recipientOptions: RecipientOptions

    @Flag(name: [.customShort("a"), .customLong("armor")], help: "Write ASCII armor instead of binary.")
    var armor = false

    @Option(
        name: [.customShort("o"), .customLong("output")], help: "Write the rekeyed file here (may be the input itself)."
    )
    var output: String?

    @Argument(help: "The age file; standard input when absent or \"-\".")
    var input: String?

    func validate() throws {
        if identityFiles.isEmpty {
            throw ValidationError("missing -i IDENTITY_FILE: rekeying needs an identity that opens the file")
        }
        if recipientOptions.isEmpty { throw ValidationError("missing new recipients: give -r RECIPIENT or -R FILE") }
    }

    func run() throws {
        let identities = try loadIdentities(identityFiles)
        let recipients = try recipientOptions.resolve()
        let input = try Input(path: input)
        defer { input.finish() }
        let destination = try Output(path: output, binary: !armor, hint: "did you mean to use -a/--armor, or -o FILE?")
        try destination.write { sink in
            var source = input.source
            try Age.rekey(from: &source, to: &sink, identities: identities, recipients: recipients, armored: armor)
        }
    }
}
