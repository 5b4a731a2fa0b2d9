import ArgumentParser
import Coffer
import CofferKeyClient
import Crypto
import Foundation

/// `coffer server-key`: keys from a Coffer key server (docs/key-server.md).
struct ServerKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server-key",
        abstract: "Fetch keys from a Coffer key server, and rotate, retire or shred them as an operator.",
        subcommands: [
            ServerKeyGet.self, ServerKeyRotate.self, ServerKeyRetire.self, ServerKeyShred.self, ServerKeyUndoShred.self,
            ServerKeyShow.self, ServerKeySubjects.self,
        ])
}

/// Where the server is.
struct ServerAddressOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The key server (https://…; http:// on loopback only).", valueName: "URL"))
    var server: String

    @Option(
        help: ArgumentHelp(
            "Trust the server's certificate only when this CA (PEM) issued it, in place of the system's roots.",
            valueName: "FILE"))
    var caFile: String?

    /// URLSession with the system's roots, or a client that trusts --ca-file.
    var transport: any KeyServerTransport {
        get throws { try ServerTrust.transport(caFile: caFile, option: "--ca-file") }
    }

    var url: URL {
        get throws {
            guard let url = URL(string: server), url.scheme == "https" || url.scheme == "http", url.host != nil else {
                throw ValidationError("--server takes an http(s) URL, not \(server)")
            }
            return url
        }
    }
}

struct ServerKeyGet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print the id and version of your key for a purpose (the key itself only with --reveal -o FILE).")
    @OptionGroup var address: ServerAddressOptions
    @Option(help: ArgumentHelp("Your sign-in token (a JWT), from this file.", valueName: "F")) var tokenFile: String
    @Option(help: "The key's purpose (notes, photos, …).") var purpose: String
    // Not --version, which every command has for Coffer's own version
    // (operator trial 4: `get` listed both).
    @Option(help: ArgumentHelp("The key's version (default: the current one).", valueName: "N")) var keyVersion: Int?
    @Option(help: "A device, for a key per device.") var device: String?
    @Flag(help: "Write the 32-byte key to -o FILE (never to the terminal, never over a file).") var reveal = false
    @Option(name: [.customShort("o"), .customLong("output")], help: "Where --reveal writes the key.") var output:
        String?
    @Flag(help: "Print JSON.") var json = false
    @Option(
        help: ArgumentHelp(
            "Prove this device with the DPoP key (P-256) kept in this file keychain, made there on first use.",
            valueName: "NAME"))
    var dpopKeychain: String?
    @Option(help: ArgumentHelp("The DPoP key's tag in that keychain.", valueName: "T")) var dpopTag = "coffer.dpop"
    @Option(help: ArgumentHelp("The DPoP keychain's passphrase, from this file.", valueName: "F"))
    var dpopKeychainPassphraseFile: String?
    @Option(help: ArgumentHelp("The DPoP keychain's key, from this file.", valueName: "F"))
    var dpopKeychainKeyFile: String?

    func validate() throws {
        if reveal != (output != nil) { throw ValidationError("--reveal and -o FILE go together") }
        if dpopKeychain == nil && (dpopKeychainPassphraseFile != nil || dpopKeychainKeyFile != nil) {
            throw ValidationError("--dpop-keychain-passphrase-file and --dpop-keychain-key-file need --dpop-keychain")
        }
    }

    func run() async throws {
        let dpop = try dpopKeychain.map { name in
            try DPoPKey.inKeychain(
                try KeychainOptions.open(
                    name: name, backend: .file, passphraseFile: dpopKeychainPassphraseFile,
                    keyFile: dpopKeychainKeyFile),
                tag: dpopTag)
        }
        let client = try KeyServerClient(
            server: try address.url, account: "coffer-cli",
            token: { [tokenFile] in try ServerKeyAuth.token(tokenFile) },
            transport: try address.transport, dpop: dpop)
        let key = try await KeyServerRefusal.mapped {
            if let keyVersion { return try await client.key(purpose: purpose, version: keyVersion, device: device) }
            return try await client.currentKey(purpose: purpose, device: device)
        }
        if reveal, let output {
            let file = try Output(path: output, binary: true)
            try file.write(replace: false) { sink in
                try key.key.withUnsafeBytes { try sink.write(Array($0)) }
            }
        }
        if json {
            print(#"{"purpose":"\#(key.purpose)","version":\#(key.version),"keyId":"\#(key.keyID)"}"#)
        } else {
            print("purpose \(key.purpose), version \(key.version), key id \(key.keyID)")
            if let dpop { print("device jkt:\(dpop.thumbprint) (proved with DPoP)") }
        }
    }
}

/// The server and the operator's token.
struct OperatorAccessOptions: ParsableArguments {
    @OptionGroup var address: ServerAddressOptions
    @Option(help: ArgumentHelp("The operator token (cofop_…), from this file.", valueName: "F"))
    var operatorTokenFile: String

    /// Runs `body` with an operator client of the server.
    func send<T>(_ body: (KeyServerAdmin) async throws -> T) async throws -> T {
        let admin = try KeyServerAdmin(
            server: try address.url, operatorToken: try ServerKeyAuth.token(operatorTokenFile),
            transport: try address.transport)
        return try await KeyServerRefusal.mapped { try await body(admin) }
    }
}

/// What every operator command about one subject takes.
struct OperatorOptions: ParsableArguments {
    @OptionGroup var access: OperatorAccessOptions
    @Option(help: "The subject (user) whose keys change.") var subject: String

    /// Runs `body` with an operator client of the server and the subject.
    func send<T>(_ body: (KeyServerAdmin, String) async throws -> T) async throws -> T {
        try await access.send { [subject] in try await body($0, subject) }
    }
}

/// Which of the subject's keys an operator command is about; after
/// ``OperatorOptions``, beside them rather than holding them (``KEKOptions``
/// says why).
struct OperatorKeyOptions: ParsableArguments {
    @Option(help: "The key's purpose.") var purpose: String
    @Option(help: "The device, for a key per device.") var device: String?
}

struct ServerKeyRotate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate", abstract: "Add a version to a subject's key and make it current (scope keys:rotate).")
    @OptionGroup var server: OperatorOptions
    @OptionGroup var key: OperatorKeyOptions
    @Flag(help: "Make a key for a subject the server holds none for (else refused: a typo makes nothing).")
    var create = false

    func run() async throws {
        let rotated = try await server.send { [purpose = key.purpose, device = key.device, create] admin, subject in
            try await admin.rotate(subject: subject, purpose: purpose, device: device, create: create)
        }
        print("purpose \(key.purpose), version \(rotated.version), key id \(rotated.keyID)")
    }
}

struct ServerKeyRetire: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retire", abstract: "Stop releasing a key's versions below a minimum (scope keys:retire).")
    @OptionGroup var server: OperatorOptions
    @OptionGroup var key: OperatorKeyOptions
    @Option(help: "The lowest version still released.") var minimumVersion: Int

    func run() async throws {
        try await server.send { [purpose = key.purpose, device = key.device, minimumVersion] admin, subject in
            try await admin.retire(subject: subject, purpose: purpose, device: device, minimumVersion: minimumVersion)
        }
        StandardError.write("Versions below \(minimumVersion) of \(key.purpose) for \(server.subject) are retired\n")
    }
}

struct ServerKeyShred: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shred",
        abstract: "Destroy every key of a subject after an undo window (scope subjects:shred).")
    @OptionGroup var options: OperatorOptions
    @Option(help: "Seconds during which undo-shred can cancel it (0: at once).") var undoWindow: Int64 = 86400
    @Flag(
        help:
            "Shred a subject the server holds no key for (its keys then answer 410 from their first request; else refused)."
    )
    var create = false
    @Flag(help: "Only print what would be destroyed, and when; change nothing.") var dryRun = false

    func run() async throws {
        if dryRun {
            let preview = try await options.send { [undoWindow, create] in
                try await $0.shredPreview(subject: $1, undoWindow: undoWindow, create: create)
            }
            print(
                "dry run: would shred \(preview.storedVersions) stored key version\(preview.storedVersions == 1 ? "" : "s") of \(options.subject) at \(preview.shredAt); nothing was changed"
            )
            return
        }
        let at = try await options.send { [undoWindow, create] in
            try await $0.shred(subject: $1, undoWindow: undoWindow, create: create)
        }
        print("shred at \(at)")
    }
}

struct ServerKeyUndoShred: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "undo-shred", abstract: "Cancel a pending shred (scope subjects:shred).")
    @OptionGroup var options: OperatorOptions

    func run() async throws {
        try await options.send { try await $0.undoShred(subject: $1) }
        StandardError.write("The shred is cancelled\n")
    }
}
