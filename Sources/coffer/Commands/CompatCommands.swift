import ArgumentParser
import Coffer
import CofferCompat
import Foundation

extension LegacyRecipe.Mode: ExpressibleByArgument {}
extension CryptoKitBox.Cipher: ExpressibleByArgument {}

/// A password (from a file, or asked on the terminal) or a 64-byte key file.
struct RNCryptorCredentials: ParsableArguments {
    @Option(help: "Read the password from this file (one final line break is ignored).") var passphraseFile: String?

    @Option(help: "64 bytes: the encryption key, then the HMAC key.") var keyFile: String?

    func validate() throws {
        if passphraseFile != nil && keyFile != nil {
            throw ValidationError("give --passphrase-file or --key-file, not both")
        }
    }

    func resolve(confirm: Bool) throws -> RNCryptor.Credentials {
        if let keyFile {
            return try RNCryptor.Credentials.keyFile(try Input.readAll(path: keyFile, what: "the key file"))
        }
        if let passphraseFile { return .password(try Passphrase.read(file: passphraseFile)) }
        return .password(try Passphrase.prompt("Password", confirm: confirm))
    }

    /// Encrypts or decrypts the input to the output as a stream (a new
    /// password is asked twice; decryption writes nothing that did not
    /// authenticate).
    func stream(_ files: FileOptions, encrypting: Bool) throws {
        let credentials = try resolve(confirm: encrypting)
        let file = try Input(path: files.inputPath)
        defer { file.finish() }
        let out = try Output(path: files.output, binary: encrypting)
        var source = file.source
        try out.write { sink in
            if encrypting {
                try RNCryptor.encrypt(from: &source, to: &sink, credentials: credentials)
            } else {
                try RNCryptor.decrypt(from: &source, to: &sink, credentials: credentials)
            }
        }
    }
}

struct RNCryptorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rncryptor",
        abstract: "Read and write RNCryptor v3 messages.",
        discussion: """
            Password messages use PBKDF2-HMAC-SHA1 (10,000 rounds); key messages take a \
            64-byte key file. Decryption checks the HMAC over the whole message before it \
            decrypts anything, and writes the output only when everything checked.
            """,
        subcommands: [RNCryptorEncrypt.self, RNCryptorDecrypt.self])
}

struct RNCryptorEncrypt: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "encrypt", abstract: "Write an RNCryptor v3 message.")
    @OptionGroup var credentials: RNCryptorCredentials
    @OptionGroup var files: FileOptions

    func run() throws { try credentials.stream(files, encrypting: true) }
}

struct RNCryptorDecrypt: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "decrypt", abstract: "Read an RNCryptor v3 message.")
    @OptionGroup var credentials: RNCryptorCredentials
    @OptionGroup var files: FileOptions

    func run() throws { try credentials.stream(files, encrypting: false) }
}

struct Legacy: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read the CommonCrypto \"data at rest\" recipe's stored dictionaries.",
        subcommands: [LegacyDecrypt.self])
}

struct LegacyDecrypt: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt",
        abstract: "Decrypt {EncryptionData, EncryptionIV, EncryptionSalt} (plist or JSON).",
        discussion: """
            PBKDF2-HMAC-SHA512 with 14,271 rounds, then AES-256 with PKCS#7. --mode cbc is what \
            the recipe's code does; --mode ecb is what kCCOptionPKCS7Padding + kCCModeCBC \
            actually selects (they add up to the ECB option). There is no MAC: the output is \
            unauthenticated, and a warning says so.
            """)

    @Option(help: "cbc or ecb: how the data was written. Never guessed.")
    var mode: LegacyRecipe.Mode

    @Option(help: "Read the passphrase from this file.") var passphraseFile: String?

    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?

    @Argument(help: "The stored dictionary: a binary or XML property list, or JSON.")
    var input: String

    func run() throws {
        let passphrase =
            try passphraseFile.map(Passphrase.read(file:)) ?? Passphrase.prompt("Passphrase", confirm: false)
        let envelope = try LegacyRecipe.envelope(try Input.readAll(path: input, what: "the input"))
        let plaintext = try LegacyRecipe.decrypt(envelope, passphrase: passphrase, mode: mode)
        StandardError.write(
            "coffer: warning: this format has no MAC; the plaintext is unauthenticated (only its padding was checked)\n"
        )
        try KeyFile.write(plaintext.bytes, to: output, binary: false)
    }
}

struct CryptoKitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cryptokit",
        abstract: "Seal and open CryptoKit sealed boxes (combined: nonce ‖ ciphertext ‖ tag).",
        subcommands: [CryptoKitSeal.self, CryptoKitOpen.self])
}

struct CryptoKitOptions: ParsableArguments {
    @Option(help: "aesgcm (AES.GCM) or chachapoly (ChaChaPoly).")
    var cipher: CryptoKitBox.Cipher

    @Option(help: "The 256-bit key: a file of 32 bytes.") var keyFile: String

    @OptionGroup var files: FileOptions

    /// Reads the key, then transforms the input to the output.
    func transform(binary: Bool, _ body: ([UInt8], [UInt8]) throws -> some Collection<UInt8>) throws {
        let key = try Input.readAll(path: keyFile, what: "the key file")
        try files.transform("the input", binary: binary) { try body($0, key) }
    }
}

struct CryptoKitSeal: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "seal", abstract: "Seal with a fresh random nonce.")
    @OptionGroup var options: CryptoKitOptions

    func run() throws {
        try options.transform(binary: true) { try CryptoKitBox.seal($0, key: $1, cipher: options.cipher) }
    }
}

struct CryptoKitOpen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open", abstract: "Open a sealed box's combined representation.")
    @OptionGroup var options: CryptoKitOptions

    func run() throws {
        try options.transform(binary: false) { try CryptoKitBox.open($0, key: $1, cipher: options.cipher) }
    }
}

struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Migrate stored data to an age file: read the old format, encrypt to age recipients.",
        discussion: """
            Credentials as for the old format's own command: apple-ecies takes --algorithm and \
            --key; rncryptor --passphrase-file or --key-file; legacy-cbc/legacy-ecb \
            --passphrase-file; cryptokit-* --key-file (32 bytes); aerogear-* --passphrase-file and either \
            --aerogear-defaults with --aerogear-prefix or --aerogear-salt with --aerogear-iv (hex). Nothing is written unless the \
            old data authenticated (for the legacy recipe, which has no MAC, unless its padding \
            is right; a warning says it was unauthenticated). The plaintext is held in memory.
            """)

    @Option(
        help: ArgumentHelp(
            "The old format: \(CompatFormat.all.map(\.name).joined(separator: ", ")).", valueName: "format"))
    var from: String

    @Option(help: "apple-ecies: the SecKey algorithm (any eciesEncryption… or rsaEncryptionOAEP…AESGCM).")
    var algorithm: String?

    @Option(name: [.customShort("k"), .customLong("key")], help: "apple-ecies: the private key file.")
    var key: String?

    @Option(help: "rncryptor, legacy-*, aerogear-*: the password file.") var passphraseFile: String?

    @OptionGroup var aeroGear: AeroGearOptions

    @Option(help: "rncryptor: 64 bytes; cryptokit-*: 32 bytes.") var keyFile: String?

    @OptionGroup var recipients: RecipientOptions

    @Flag(name: [.customShort("a"), .customLong("armor")], help: "Write an ASCII-armored age file.")
    var armor = false

    @Option(
        name: [.customShort("o"), .customLong("output")], help: "Write the age file here instead of standard output.")
    var output: String?

    @Argument(help: "The old data; standard input when absent or \"-\".")
    var input: String?

    func validate() throws {
        if recipients.isEmpty { throw ValidationError("give at least one recipient (-r or -R)") }
        if passphraseFile != nil && aeroGear.aerogearPasswordFile != nil {
            throw ValidationError("give the password once: --passphrase-file or --aerogear-password-file")
        }
    }

    func run() throws {
        let format: CompatFormat
        do { format = try CompatFormat.named(from) } catch let error as CofferError {
            throw ValidationError(error.description)
        }
        let recipientList = try recipients.resolve()
        let old = try Input.readAll(path: input ?? "-", what: "the input")
        let read = { try format.read(old, with: try credentials(for: format)) }
        let plaintext: Data
        // A wrong AeroGear password is said as such (the hint names its option).
        if case .aeroGearParameters = format.needs {
            plaintext = try aeroGear.hintingPassword(read)
        } else {
            plaintext = try read()
        }
        if !format.authenticated {
            StandardError.write(
                "coffer: warning: \(format.name) has no MAC; the converted plaintext was unauthenticated (only its padding was checked)\n"
            )
        }
        let out = try Output(path: output, binary: !armor, hint: "did you mean to use -a/--armor, or -o FILE?")
        var source = BufferSource(plaintext)
        try out.write { sink in try Age.encrypt(from: &source, to: &sink, recipients: recipientList, armored: armor) }
    }

    /// What `format` needs, from the options (a password asked on the
    /// terminal when no file names it).
    func credentials(for format: CompatFormat) throws -> CompatFormat.Credentials {
        var given = CompatFormat.Credentials()
        func file(_ path: String?, _ option: String) throws -> [UInt8] {
            guard let path else { throw ValidationError("\(format.name) needs \(option)") }
            return try Input.readAll(path: path, what: "the key file")
        }
        func password() throws -> [UInt8] {
            try passphraseFile.map(Passphrase.read(file:)) ?? Passphrase.prompt("Passphrase", confirm: false)
        }
        switch format.needs {
        case .password: given.password = try password()
        case .key: given.key = try file(keyFile, "--key-file")
        case .passwordOrKey:
            if passphraseFile != nil && keyFile != nil {
                throw ValidationError("give --passphrase-file or --key-file, not both")
            }
            if let keyFile { given.key = try file(keyFile, "--key-file") } else { given.password = try password() }
        case .privateKeyAndAlgorithm:
            guard let algorithm, let key else { throw ValidationError("\(format.name) needs --algorithm and --key") }
            given.privateKey = try AppleKeyFile.load(key)
            given.algorithm = algorithm
        case .aeroGearParameters(let generation):
            given.aeroGear = try aeroGear.parameters(generation: generation, hexAllowed: true)
            given.password = Array(try aeroGear.password(fallbackFile: passphraseFile).utf8)
        }
        return given
    }
}
