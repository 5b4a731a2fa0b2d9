import ArgumentParser
import Coffer
import CofferKeychain
import Crypto
import Foundation

/// A stored agreement key, the peer's public key and the KDF: what the
/// keychain key agreement commands share.
struct KeychainAgreement: ParsableArguments {
    @Option(help: "The application tag of your p256 or x25519 key.")
    var tag: String

    @Option(help: "p256 or x25519.")
    var type: KeychainKeyType = .p256

    @Option(help: "The other side's public key file.") var peer: String

    @Option(help: "x963-sha256, x963-sha1, x963-sha384, x963-sha512 or hkdf-sha256.")
    var kdf: KeyAgreement.KDF = .x963SHA256

    @Option(help: "A file whose bytes are the KDF's shared info.") var sharedInfoFile: String?

    func validate() throws {
        if type != .p256 && type != .x25519 { throw ValidationError("key agreement uses a p256 or x25519 key") }
    }

    func derive(_ keychain: any Keychain, size: Int) throws -> SymmetricKey {
        let sharedInfo = try sharedInfoFile.map { try Input.readAll(path: $0, what: "the shared info file") } ?? []
        return try keychain.agree(
            tag: tag, type: type, peer: try KeyFile.publicKey(peer), kdf: kdf, size: size, sharedInfo: sharedInfo)
    }
}

struct KeychainAgree: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agree",
        abstract: "Derive a key by ECDH between a stored key and a peer's public key, then a KDF (as coffer agree).",
        discussion: "The key is printed in hex; --raw -o FILE writes its bytes instead.")
    @OptionGroup var keychain: KeychainOptions
    @OptionGroup var agreement: KeychainAgreement
    @Option(help: "Bytes to derive.")
    var size: Int = 32
    @OptionGroup var destination: DerivedKeyOutput

    func run() throws {
        try destination.write(try agreement.derive(try keychain.open(), size: size).withUnsafeBytes { Array($0) })
    }
}

struct KeychainEncryptTo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encrypt-to",
        abstract: "Encrypt standard input for a peer: AES-256-GCM under the key ECDH and the KDF derive.",
        discussion: """
            Writes nonce (12) ‖ ciphertext ‖ tag (16), CryptoKit's AES.GCM.SealedBox.combined, \
            base64 with --base64. The peer decrypts with decrypt-from, its key and your public key, \
            and the same shared info.
            """)
    @OptionGroup var keychain: KeychainOptions
    @OptionGroup var agreement: KeychainAgreement
    @Flag(help: "Write base64 text instead of bytes.")
    var base64 = false
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?

    func run() throws {
        let key = try agreement.derive(try keychain.open(), size: 32)
        let sealed = try KeyAgreement.Box.seal(try Input.readAll(path: "-", what: "the message"), using: key)
        let bytes = base64 ? Array((Data(sealed).base64EncodedString() + "\n").utf8) : Array(sealed)
        try KeyFile.write(bytes, to: output, binary: !base64)
    }
}

struct KeychainDecryptFrom: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt-from",
        abstract: "Decrypt what encrypt-to wrote (standard input), with your stored key and the sender's public key.")
    @OptionGroup var keychain: KeychainOptions
    @OptionGroup var agreement: KeychainAgreement
    @Flag(help: "Read base64 text instead of bytes.")
    var base64 = false
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?

    func run() throws {
        let key = try agreement.derive(try keychain.open(), size: 32)
        var input = try Input.readAll(path: "-", what: "the ciphertext")
        if base64 {
            guard
                let decoded = Data(
                    base64Encoded: String(decoding: input, as: UTF8.self).trimmingCharacters(
                        in: .whitespacesAndNewlines))
            else {
                throw CLIFailure("the input is not base64", status: 4)
            }
            input = Array(decoded)
        }
        let plaintext = try KeyAgreement.Box.open(input, using: key)
        try KeyFile.write(Array(plaintext), to: output, binary: true)
    }
}
