import ArgumentParser
import Coffer

struct Decrypt: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decrypt an age file, binary or armored.",
        discussion: """
            Without -i, the file must be passphrase-encrypted: the passphrase comes from \
            --passphrase-file or the terminal. Nothing is written unless the whole file \
            authenticates: output goes to a temporary file that is renamed into place.
            """)

    @Option(name: [.customShort("i"), .customLong("identity")], help: "An identity file (AGE-SECRET-KEY-1… lines). Repeatable.")
    var identityFiles: [String] = []

    @Option(name: .customLong("passphrase-file"), help: "Read the passphrase from this file (a path or /dev/fd/N).")
    var passphraseFile: String?

    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the plaintext to this file.")
    var output: String?

    @Argument(help: "The age file; standard input when absent or \"-\".")
    var input: String?

    func run() throws {
        var identities = try loadIdentities(identityFiles)
        if identities.isEmpty || passphraseFile != nil {
            identities.append(LazyPassphraseIdentity(file: passphraseFile))
        }
        let input = try Input(path: input)
        defer { input.finish() }
        // Plaintext to a terminal is allowed for text; to keep a pipe or a
        // file clean of partial output on failure, prefer -o.
        let destination = try Output(path: output, binary: false)
        let bar = ProgressBar.make(total: input.size)
        defer { bar?.finish() }
        try destination.write { sink in
            var source = input.source
            try Age.decrypt(from: &source, to: &sink, identities: identities, progress: bar.map { bar in { bar.update($0) } })
        }
    }
}
