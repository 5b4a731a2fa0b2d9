import ArgumentParser
import Coffer
import Crypto
import Foundation

struct Keygen: ParsableCommand {
    enum KeyType: String, ExpressibleByArgument, CaseIterable {
        case x25519, mlkem768x25519, p256, mlkem768p256
    }

    static let configuration = CommandConfiguration(
        abstract: "Generate an identity, or print the recipient of one.",
        discussion: """
            x25519 (the default) writes an AGE-SECRET-KEY-1… line, mlkem768x25519 a \
            post-quantum AGE-SECRET-KEY-PQ-1… line, p256 a P-256 private key in PEM \
            (PKCS#8) whose recipient is age1tag1…. The identity file is created with mode \
            0600 and never overwrites an existing file. Its public recipient is printed \
            on standard error.
            """)

    @Option(name: .customLong("type"), help: "The kind of key to generate.")
    var keyType: KeyType = .x25519

    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the identity to this new file.")
    var output: String?

    @Option(name: .customShort("y"), help: ArgumentHelp(
        "Print the recipient of each identity in this file (\"-\" for standard input).", valueName: "identity-file"))
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
                case let tagged as MLKEM768P256Tag.Identity: print(tagged.recipient)
                default: continue
                }
            }
            return
        }
        let created = ISO8601DateFormatter().string(from: Date())
        let recipient: String, text: String
        switch keyType {
        case .x25519:
            let identity = X25519.Identity()
            recipient = identity.recipient.description
            text = "# created: \(created)\n# public key: \(recipient)\n\(identity.exportSecretKey())\n"
        case .mlkem768x25519:
            let identity = try MLKEM768X25519.Identity()
            recipient = identity.recipient.description
            text = "# created: \(created)\n# public key: \(recipient)\n\(identity.exportSecretKey())\n"
        case .mlkem768p256:
            let identity = try MLKEM768P256Tag.Identity()
            recipient = identity.recipient.description
            text = "# created: \(created)\n# public key: \(recipient)\n\(identity.exportSecretKey())\n"
        case .p256:
            let key = P256.KeyAgreement.PrivateKey()
            recipient = P256Tag.Identity(privateKey: key).recipient.description
            text = key.pemRepresentation + "\n"
        }
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
            StandardError.write("Public key: \(recipient)\n")
        } else {
            if !Output.isTerminal { StandardError.write("Public key: \(recipient)\n") }
            print(text, terminator: "")
        }
    }
}
