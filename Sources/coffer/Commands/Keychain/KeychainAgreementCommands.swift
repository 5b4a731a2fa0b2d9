import ArgumentParser
import Coffer
import CofferKeychain
import Crypto
import Foundation

/// A stored agreement key, the peer's public key and the KDF: what the
/// keychain key agreement commands share.
struct KeychainAgreement: ParsableArguments {
    @OptionGroup var keychain: KeychainOptions

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

    func derive(size: Int) throws -> SymmetricKey {
        let sharedInfo = try sharedInfoFile.map { try Input.readAll(path: $0, what: "the shared info file") } ?? []
        return try keychain.open().agree(
            tag: tag, type: type, peer: try KeyFile.publicKey(peer), kdf: kdf, size: size, sharedInfo: sharedInfo)
    }
}

/// Where the output of encrypt-to and decrypt-from goes (standard input
/// is their input); after the agreement's options, beside them rather
/// than holding them (``KEKOptions`` says why).
struct KeychainBoxOptions: ParsableArguments {
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?

    /// Derives the 256-bit key of `agreement`, then writes what `body`
    /// makes of standard input and the key.
    func transform(
        _ what: String, _ agreement: KeychainAgreement, binary: Bool, _ body: ([UInt8], SymmetricKey) throws -> [UInt8]
    ) throws {
        let key = try agreement.derive(size: 32)
        try KeyFile.write(try body(try Input.readAll(path: "-", what: what), key), to: output, binary: binary)
    }
}

struct KeychainAgree: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agree",
        abstract: "Derive a key by ECDH between a stored key and a peer's public key, then a KDF (as coffer agree).",
        discussion: "The key is printed in hex; --raw -o FILE writes its bytes instead.")
    @OptionGroup var agreement: KeychainAgreement
    @Option(help: "Bytes to derive.")
    var size: Int = 32
    @OptionGroup var destination: DerivedKeyOutput

    func run() throws {
        try destination.write(try agreement.derive(size: size).withUnsafeBytes { Array($0) })
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
    @OptionGroup var agreement: KeychainAgreement
    @OptionGroup var box: KeychainBoxOptions
    @Flag(help: "Write base64 text instead of bytes.")
    var base64 = false

    func run() throws {
        try box.transform("the message", agreement, binary: !base64) { message, key in
            let sealed = try KeyAgreement.Box.seal(message, using: key)
            return base64 ? Array((Data(sealed).base64EncodedString() + "\n").utf8) : Array(sealed)
        }
    }
}

struct KeychainDecryptFrom: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt-from",
        abstract: "Decrypt what encrypt-to wrote (standard input), with your stored key and the sender's public key.")
    @OptionGroup var agreement: KeychainAgreement
    @OptionGroup var box: KeychainBoxOptions
    @Flag(help: "Read base64 text instead of bytes.")
    var base64 = false

    func run() throws {
        try box.transform("the ciphertext", agreement, binary: true) { input, key in
            guard base64 else { return Array(try KeyAgreement.Box.open(input, using: key)) }
            let text = String(decoding: input, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let decoded = Data(base64Encoded: text) else {
                throw CLIFailure("the input is not base64", status: 4)
            }
            return Array(try KeyAgreement.Box.open(decoded, using: key))
        }
    }
}
