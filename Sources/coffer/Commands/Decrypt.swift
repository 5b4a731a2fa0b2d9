import ArgumentParser
import Coffer
import CofferKeychain
import Foundation

struct Decrypt: ParsableCommand, ErrorHinting {
    static let configuration = CommandConfiguration(
        abstract: "Decrypt an age file, binary or armored.",
        discussion: """
            Without -i, the file must be passphrase-encrypted: the passphrase comes from \
            --passphrase-file or the terminal. Nothing is written unless the whole file \
            authenticates: output goes to a temporary file that is renamed into place.
            """)

    @Option(
        name: [.customShort("i"), .customLong("identity")],
        help:
            "An identity file (AGE-SECRET-KEY-1… lines, or a private key file); with --keychain, the label of an identity kept there. Repeatable."
    )
    var identityFiles: [String] = []

    @Option(help: "Take the --identity labels from this keychain (coffer keychain add-identity).") var keychain: String?

    @Option(help: "file or secret-service (with --keychain).") var keychainBackend: KeychainBackend = .file

    @Option(help: "The keychain's passphrase (with --keychain).") var keychainPassphraseFile: String?

    @Option(help: "The keychain's 32-byte key file (with --keychain).") var keychainKeyFile: String?

    @Option(help: "Read the passphrase from this file (a path or /dev/fd/N).") var passphraseFile: String?

    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the plaintext to this file.")
    var output: String?

    @Argument(help: "The age file; standard input when absent or \"-\".")
    var input: String?

    func validate() throws {
        if keychain != nil && identityFiles.isEmpty {
            throw ValidationError("--keychain needs the --identity label of an identity kept there")
        }
    }

    func run() throws {
        var identities: [any Identity]
        if let keychain {
            let file = try KeychainOptions.open(
                name: keychain, backend: keychainBackend, passphraseFile: keychainPassphraseFile,
                keyFile: keychainKeyFile)
            identities = try identityFiles.flatMap { label in
                do { return try file.ageIdentities(label: label) } catch let error as KeychainError
                    where error.code == .itemNotFound
                {
                    throw KeychainError(
                        .itemNotFound,
                        "the keychain \(keychain) holds no age identity labelled \(label) (coffer keychain add-identity)"
                    )
                }
            }
        } else {
            identities = try loadIdentities(identityFiles)
        }
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
        var written: Int64 = 0
        do {
            try destination.write { sink in
                var source = input.source
                try Age.decrypt(from: &source, to: &sink, identities: identities) { total in
                    written = total
                    bar?.update(total)
                }
            }
        } catch let error as CofferError where written > 0 && Self.toStandardOutput(output) {
            // A file is renamed into place only whole; a pipe cannot take back what it was given.
            throw CofferError(
                error.code,
                "\(error.description); \(written) bytes of plaintext, the part before it, had already gone to standard output"
            )
        }
    }

    static func toStandardOutput(_ output: String?) -> Bool { output == nil || output == "-" }

    func hint(for error: CofferError) -> String? {
        if error.code == .wrongPassword {
            return "check the passphrase (--passphrase-file FILE, or type it when asked on a terminal)"
        }
        guard [.payloadAuthenticationFailed, .malformedPayload].contains(error.code), Self.toStandardOutput(output)
        else { return nil }
        return "discard what standard output received; with -o FILE nothing is kept unless the whole file authenticates"
    }
}
