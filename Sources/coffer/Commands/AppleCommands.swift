import ArgumentParser
import Coffer
import CofferCompat
import Foundation

struct Apple: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read and write what Apple's SecKey encrypts (ECIES, RSA-OAEP + AES-GCM), byte for byte.",
        discussion: """
            --algorithm takes the Swift spelling (eciesEncryptionCofactorVariableIVX963SHA256AESGCM, \
            rsaEncryptionOAEPSHA256AESGCM, ecdhKeyExchangeCofactorX963SHA256) or the constant \
            (kSecKeyAlgorithmECIESEncryption…). --key takes SecKeyCopyExternalRepresentation's \
            bytes (EC 04 ‖ X ‖ Y [‖ D], RSA PKCS#1 DER), their base64, or a PEM/DER key file. \
            RSA-OAEP with SHA-224/384/512 is not available (swift-crypto has only SHA-1 and \
            SHA-256); P-192 keys are not supported.
            """,
        subcommands: [Encrypt.self, Decrypt.self, KeyExchange.self])
}

struct AppleOptions: ParsableArguments {
    @Option(help: "The SecKeyAlgorithm.")
    var algorithm: String

    @Option(name: [.customShort("k"), .customLong("key")], help: "The key file.")
    var keyFile: String

    @OptionGroup var files: FileOptions

    /// Reads the algorithm and key, then transforms the input to the output.
    func transform(
        binary: Bool, _ body: ([UInt8], AppleKey, AppleAlgorithm) throws -> some Collection<UInt8>
    ) throws {
        let algorithm = try AppleAlgorithm(self.algorithm)
        let key = try AppleKeyFile.load(keyFile)
        try files.transform("the input", binary: binary) { try body($0, key, algorithm) }
    }
}

enum AppleKeyFile {
    static func load(_ path: String) throws -> AppleKey {
        let bytes = try Input.readAll(path: path, what: "the key file")
        do { return try AppleKey(fileBytes: bytes) } catch let error as CofferError {
            throw error.prefixed(path)
        }
    }
}

extension Apple {
    struct Encrypt: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Encrypt as SecKeyCreateEncryptedData does.")
        @OptionGroup var options: AppleOptions

        func run() throws {
            try options.transform(binary: true) { try AppleSecKey.encrypt($0, to: $1, algorithm: $2) }
        }
    }

    struct Decrypt: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Decrypt what SecKeyCreateEncryptedData wrote.")
        @OptionGroup var options: AppleOptions

        func run() throws {
            try options.transform(binary: false) { try AppleSecKey.decrypt($0, with: $1, algorithm: $2) }
        }
    }

    struct KeyExchange: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Compute SecKeyCopyKeyExchangeResult (ECDH with an X9.63 KDF); prints hex.")

        @Option(
            help: "ecdhKeyExchange{Standard|Cofactor}X963SHA{1,224,256,384,512}, or without X963… for the raw secret.")
        var algorithm: String

        @Option(name: .customLong("private"), help: "Your private key file.")
        var privateKey: String

        @Option(name: .customLong("public"), help: "The other side's public key file.")
        var publicKey: String

        @Option(help: "kSecKeyKeyExchangeParameterRequestedSize: bytes to derive.")
        var size: Int = 32

        @Option(help: "kSecKeyKeyExchangeParameterSharedInfo, from a file.") var sharedInfoFile: String?

        func run() throws {
            let algorithm = try AppleAlgorithm(self.algorithm)
            let sharedInfo = try sharedInfoFile.map { try Input.readAll(path: $0, what: "the shared info file") } ?? []
            let result = try AppleSecKey.keyExchange(
                privateKey: try AppleKeyFile.load(privateKey), publicKey: try AppleKeyFile.load(publicKey),
                algorithm: algorithm, size: size, sharedInfo: sharedInfo)
            print(Hex.encode(result))
        }
    }
}
