import ArgumentParser
import Coffer
import Crypto
import Foundation

extension RSAEncryption.Hash: ExpressibleByArgument {}
extension KeyAgreement.KDF: ExpressibleByArgument {}
extension Signatures.ECDSAFormat: ExpressibleByArgument {}
extension Signatures.RSAPadding: ExpressibleByArgument {}
extension KeyFiles.Format: ExpressibleByArgument {}

/// Key files for the plain public-key commands; errors name the file.
enum KeyFile {
    static func privateKey(_ path: String) throws -> AsymmetricPrivateKey {
        let bytes = try Input.readAll(path: path, what: "the private key file", secret: true)
        do { return try KeyFiles.privateKey(bytes) } catch let error as CofferError {
            throw error.prefixed(path)
        }
    }

    static func publicKey(_ path: String) throws -> AsymmetricPublicKey {
        let bytes = try Input.readAll(path: path, what: "the key file")
        do { return try KeyFiles.publicKey(bytes) } catch let error as CofferError {
            throw error.prefixed(path)
        }
    }

    static func write(_ bytes: some Collection<UInt8>, to path: String?, binary: Bool, replace: Bool = true) throws {
        let output = try Output(path: path, binary: binary)
        try output.write(replace: replace) { try $0.write(Array(bytes)) }
    }
}

/// Where a derived key goes (agree, keychain agree): a line of hex, or
/// with --raw its bytes, which must go to a file.
struct DerivedKeyOutput: ParsableArguments {
    @Flag(help: "Write the derived bytes, not hex (needs -o).")
    var raw = false

    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file.")
    var output: String?

    func validate() throws {
        if raw && (output == nil || output == "-") { throw ValidationError("--raw writes binary: give -o FILE") }
    }

    func write(_ bytes: [UInt8]) throws {
        if raw {
            try KeyFile.write(bytes, to: output, binary: true)
        } else {
            try KeyFile.write(Array((Hex.encode(bytes) + "\n").utf8), to: output, binary: false)
        }
    }
}

struct RSA: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Encrypt or decrypt one short message with RSA-OAEP.",
        discussion: """
            Byte-compatible with SecKeyCreateEncryptedData(.rsaEncryptionOAEPSHA256) (or \
            .rsaEncryptionOAEPSHA1 with --hash sha1). A message may be at most k − 2h − 2 \
            bytes: 190 for RSA-2048 with SHA-256. For files, use coffer encrypt with an \
            ssh-rsa recipient.
            """,
        subcommands: [Encrypt.self, Decrypt.self])
}

struct RSAOptions: ParsableArguments {
    @Option(name: [.customShort("k"), .customLong("key")], help: "The key file (any format coffer reads).")
    var keyFile: String

    @Option(help: "OAEP's hash: sha256, or sha1 for older peers.")
    var hash: RSAEncryption.Hash = .sha256

    @OptionGroup var files: FileOptions

    /// Reads the key file with `key` first, then transforms the input with
    /// the key and the hash.
    func transform<Key>(
        _ what: String, binary: Bool, key: (String) throws -> Key,
        _ body: ([UInt8], Key, RSAEncryption.Hash) throws -> some Collection<UInt8>
    ) throws {
        let key = try key(keyFile)
        try files.transform(what, binary: binary) { try body($0, key, hash) }
    }
}

extension RSA {
    struct Encrypt: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Encrypt a message to an RSA public key.")
        @OptionGroup var options: RSAOptions

        func run() throws {
            try options.transform("the message", binary: true, key: KeyFile.publicKey) {
                try RSAEncryption.encrypt($0, to: $1, hash: $2)
            }
        }
    }

    struct Decrypt: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Decrypt a message with an RSA private key.")
        @OptionGroup var options: RSAOptions

        func run() throws {
            try options.transform("the ciphertext", binary: false, key: KeyFile.privateKey) {
                try RSAEncryption.decrypt($0, with: $1, hash: $2)
            }
        }
    }
}

struct Agree: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Derive a key by ECDH (P-256, P-384, P-521, X25519) and a KDF.",
        discussion: """
            The default, x963-sha256, gives the bytes SecKeyCopyKeyExchangeResult returns \
            for kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA256 with the same requestedSize \
            and sharedInfo. hkdf-sha256 uses an empty salt and the shared info as info. \
            The key is printed in hex; --raw -o FILE writes its bytes instead. \
            --insecure-raw-secret skips the KDF and outputs the ECDH secret itself.
            """)

    @Option(name: .customLong("private"), help: "Your private key file.")
    var privateKey: String

    @Option(help: "The other side's public key file.") var peer: String

    @Option(help: "x963-sha256, x963-sha1, x963-sha384, x963-sha512 or hkdf-sha256.")
    var kdf: KeyAgreement.KDF = .x963SHA256

    @Option(help: "Bytes to derive.")
    var size: Int = 32

    @Option(help: "A file whose bytes are the KDF's shared info.") var sharedInfoFile: String?

    @Flag(help: "Output the ECDH shared secret without a KDF (for peers that apply their own).")
    var insecureRawSecret = false

    @OptionGroup var destination: DerivedKeyOutput

    func run() throws {
        let privateKey = try KeyFile.privateKey(privateKey)
        let peer = try KeyFile.publicKey(peer)
        let bytes: [UInt8]
        if insecureRawSecret {
            bytes = try KeyAgreement.insecureRawSharedSecret(privateKey: privateKey, peer: peer)
        } else {
            let sharedInfo = try sharedInfoFile.map { try Input.readAll(path: $0, what: "the shared info file") } ?? []
            let key = try KeyAgreement.agree(
                privateKey: privateKey, peer: peer, kdf: kdf, size: size, sharedInfo: sharedInfo)
            bytes = key.withUnsafeBytes { Array($0) }
        }
        try destination.write(bytes)
    }
}

struct Sign: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sign a file: Ed25519, ECDSA (P-256/384/521), RSA-PSS-SHA256 or ML-DSA-65.",
        discussion: """
            The scheme follows the key. ECDSA uses SHA-256, SHA-384 or SHA-512 for P-256, \
            P-384 or P-521 and writes DER (as SecKey and OpenSSL do) unless --format raw \
            (r ‖ s). RSA signs with PSS, SHA-256, MGF1-SHA-256 and a 32-byte salt. The \
            input is read into memory.
            """)

    @Option(name: [.customShort("k"), .customLong("key")], help: "The private key file.")
    var keyFile: String

    @Option(help: "ECDSA signature encoding: der or raw.")
    var format: Signatures.ECDSAFormat = .der

    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the signature to this file.")
    var output: String?

    @Argument(help: "The file to sign; standard input when absent or \"-\".")
    var input: String?

    func run() throws {
        let key = try KeyFile.privateKey(keyFile)
        let message = try Input.readAll(path: input ?? "-", what: "the input")
        try KeyFile.write(try Signatures.sign(message, with: key, ecdsaFormat: format), to: output, binary: true)
    }
}

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify a signature; exit status 0 only when it is valid.",
        discussion: """
            ECDSA signatures are read as DER or raw r ‖ s. RSA signatures are PSS unless \
            --rsa-padding pkcs1v15-insecure, which accepts the legacy PKCS#1 v1.5 padding \
            (verification only). An invalid signature exits with status 3.
            """)

    @Option(name: [.customShort("k"), .customLong("key")], help: "The public key file (a private key file works too).")
    var keyFile: String

    @Option(name: [.customShort("s"), .customLong("signature")], help: "The signature file.")
    var signatureFile: String

    @Option(help: "pss, or pkcs1v15-insecure for old signatures.") var rsaPadding: Signatures.RSAPadding = .pss

    @Argument(help: "The signed file; standard input when absent or \"-\".")
    var input: String?

    func run() throws {
        let key = try KeyFile.publicKey(keyFile)
        let signature = try Input.readAll(path: signatureFile, what: "the signature")
        let message = try Input.readAll(path: input ?? "-", what: "the input")
        guard try Signatures.isValid(signature, for: message, with: key, rsaPadding: rsaPadding) else {
            throw CLIFailure("the signature is not valid for this input and key (\(key.algorithm))", status: 3)
        }
        if rsaPadding == .pkcs1v15Insecure {
            StandardError.write("coffer: warning: verified a PKCS#1 v1.5 signature (legacy padding)\n")
        }
        print("valid \(key.algorithm) signature")
    }
}

struct Key: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Inspect key files and convert them between formats.",
        subcommands: [KeyShow.self, KeyConvert.self])
}

struct KeyShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Print a key file's algorithm and public key.")

    @Argument(help: "The key file.")
    var keyFile: String

    func run() throws {
        let bytes = try Input.readAll(path: keyFile, what: "the key file")
        if let privateKey = try? KeyFiles.privateKey(bytes) {
            print("\(privateKey.algorithm) private key")
            print(String(decoding: try KeyFiles.encode(privateKey.publicKey, as: .spki), as: UTF8.self), terminator: "")
        } else {
            let publicKey = try KeyFile.publicKey(keyFile)
            print("\(publicKey.algorithm) public key")
            print(String(decoding: try KeyFiles.encode(publicKey, as: .spki), as: UTF8.self), terminator: "")
        }
    }
}

struct KeyConvert: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Write a key file in another format.",
        discussion: """
            Formats: pkcs8 (private), spki (public), pkcs1 (RSA), sec1 (EC private), \
            openssh (Ed25519 and ECDSA private keys, and public key lines), apple \
            (SecKeyCopyExternalRepresentation: 04 ‖ X ‖ Y [‖ D] for EC, PKCS#1 DER for RSA). \
            PEM unless --der. --public writes the public key of a private key file. \
            Files are created with mode 0600.
            """)

    @Option(name: .customLong("to"), help: "pkcs8, spki, pkcs1, sec1, openssh or apple.")
    var format: KeyFiles.Format

    @Flag(help: "Write DER instead of PEM.")
    var der = false

    @Flag(name: .customLong("public"), help: "Write the public key.")
    var publicOnly = false

    @Option(name: [.customShort("o"), .customLong("output")], help: "The new file; standard output when absent.")
    var output: String?

    @Argument(help: "The key file to read.")
    var keyFile: String

    func run() throws {
        let bytes = try Input.readAll(path: keyFile, what: "the key file")
        let encoded: [UInt8]
        var secret = false
        if !publicOnly && format != .spki, let privateKey = try? KeyFiles.privateKey(bytes) {
            encoded = try KeyFiles.encode(privateKey, as: format, der: der)
            secret = true
        } else {
            encoded = try KeyFiles.encode(try KeyFile.publicKey(keyFile), as: format, der: der)
        }
        let binary = der || format == .apple
        // A private key never replaces an existing file (the README's rule for -o).
        try KeyFile.write(encoded, to: output, binary: binary, replace: !secret)
    }
}
