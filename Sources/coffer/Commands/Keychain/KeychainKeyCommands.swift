import ArgumentParser
import Coffer
import CofferKeychain
import Crypto
import Foundation

/// The keychain and the application tag that name a stored key.
struct StoredKeyTag: ParsableArguments {
    @OptionGroup var keychain: KeychainOptions
    @Option(help: "The application tag.")
    var tag: String
}

struct KeychainGenerateKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate-key",
        abstract: "Generate a key into the keychain and print its public key (SPKI PEM).")
    @OptionGroup var key: StoredKeyTag
    @Option(help: "p256, x25519, rsa2048, rsa3072, rsa4096 or symmetric256.")
    var type: KeychainKeyType
    @Option(help: "A label.")
    var label: String?
    @Flag(help: "Return the existing key instead of failing when the tag is taken (get or create).")
    var ifMissing = false

    func run() throws {
        let file = try key.keychain.open()
        let publicKey =
            ifMissing
            ? try file.getOrCreateKey(type, tag: key.tag, label: label)
            : try file.generateKey(type, tag: key.tag, label: label)
        if let publicKey {
            print(String(decoding: try KeyFiles.encode(publicKey, as: .spki), as: UTF8.self), terminator: "")
        }
    }
}

struct KeychainPublicKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "public-key", abstract: "Write a stored key's public key.", aliases: ["export-public"])
    @OptionGroup var key: StoredKeyTag
    @Option(help: "The key type.")
    var type: KeychainKeyType
    @Option(help: "spki (PEM), openssh or apple (SecKey's external representation).")
    var format: KeyFiles.Format = .spki
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?

    func run() throws {
        let publicKey = try key.keychain.open().publicKey(tag: key.tag, type: type)
        try KeyFile.write(try KeyFiles.encode(publicKey, as: format), to: output, binary: format == .apple)
    }
}

struct KeychainRSADecrypt: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rsa-decrypt",
        abstract: "Decrypt an RSA-OAEP message (coffer rsa encrypt, SecKeyCreateEncryptedData) with a stored RSA key.")
    @OptionGroup var key: StoredKeyTag
    @Option(help: "rsa2048, rsa3072 or rsa4096.")
    var type: KeychainKeyType = .rsa2048
    @Option(help: "OAEP's hash: sha256, or sha1 for older peers.")
    var hash: RSAEncryption.Hash = .sha256
    @OptionGroup var files: FileOptions

    func run() throws {
        try files.transform("the ciphertext", binary: false) {
            try key.keychain.open().rsaDecrypt($0, tag: key.tag, type: type, hash: hash).revealed()
        }
    }
}
