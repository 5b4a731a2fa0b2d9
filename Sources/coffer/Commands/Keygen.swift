import ArgumentParser
import Coffer
import Foundation

struct Keygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate an X25519 identity, or print the recipient of one.",
        discussion: """
            The identity file is created with mode 0600 and never overwrites an existing \
            file. Its public recipient is printed on standard error.
            """)

    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the identity to this new file.")
    var output: String?

    @Option(name: .customShort("y"), help: "Print the recipient of each identity in this file (\"-\" for standard input).")
    var identityFile: String?

    func validate() throws {
        if identityFile != nil && output != nil {
            throw ValidationError("-y prints to standard output; it cannot be combined with -o")
        }
    }

    func run() throws {
        if let identityFile {
            let contents = String(decoding: try Input.readAll(path: identityFile, what: "the identity file"), as: UTF8.self)
            for identity in try AgeKeys.identities(fileContents: contents, name: identityFile) {
                switch identity {
                case let x25519 as X25519.Identity: print(x25519.recipient)
                case let hybrid as MLKEM768X25519.Identity: print(hybrid.recipient)
                case let tagged as P256Tag.Identity: print(tagged.recipient)
                default: continue
                }
            }
            return
        }
        let identity = X25519.Identity()
        let created = ISO8601DateFormatter().string(from: Date())
        let text = "# created: \(created)\n# public key: \(identity.recipient)\n\(identity.exportSecretKey())\n"
        if let output, output != "-" {
            if FileManager.default.fileExists(atPath: output) {
                throw CLIFailure("\(output) already exists; refusing to overwrite an identity file",
                                 hint: "choose another name, or delete the old file if you are sure no file needs it",
                                 status: CLIFailure.refusedStatus)
            }
            let file = try AtomicFile(destination: output, mode: 0o600)
            var sink = file.sink
            do {
                try sink.write(Array(text.utf8))
                try file.commit(replace: false)
            } catch {
                file.abort()
                throw CLIFailure("\(output) already exists or cannot be written; refusing to overwrite an identity file",
                                 status: CLIFailure.refusedStatus)
            }
            StandardError.write("Public key: \(identity.recipient)\n")
        } else {
            if !Output.isTerminal { StandardError.write("Public key: \(identity.recipient)\n") }
            print(text, terminator: "")
        }
    }
}
