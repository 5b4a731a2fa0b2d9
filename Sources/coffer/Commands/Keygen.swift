import ArgumentParser
import Coffer
import Crypto
import CryptoExtras
import Foundation

struct Keygen: ParsableCommand {
    enum KeyType: String, ExpressibleByArgument, CaseIterable {
        case x25519, mlkem768x25519, p256, mlkem768p256, ed25519, rsa2048, rsa3072, rsa4096, mldsa65
    }

    static let configuration = CommandConfiguration(
        abstract: "Generate an identity, or print the recipient of one.",
        discussion: """
            x25519 (the default) writes an AGE-SECRET-KEY-1… line, mlkem768x25519 a \
            post-quantum AGE-SECRET-KEY-PQ-1… line, p256 a P-256 private key in PEM \
            (PKCS#8) whose recipient is age1tag1…, mlkem768p256 a COFFER-TAGPQ-SECRET-KEY-1… \
            line whose recipient is age1tagpq1…. ed25519 writes an OpenSSH private key \
            (an ssh-ed25519 age identity and a signing key); rsa2048/3072/4096 an RSA key \
            in PKCS#8 PEM (an ssh-rsa age identity, and for RSA-OAEP and RSA-PSS); mldsa65 \
            an ML-DSA-65 signing key in PKCS#8 PEM (its seed). The key file is created with \
            mode 0600 and never overwrites an existing file. The public key or recipient is \
            printed on standard error; -y prints it from an existing key file.
            """)

    @Option(name: .customLong("type"), help: "The kind of key to generate.")
    var keyType: KeyType = .x25519

    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the identity to this new file.")
    var output: String?

    @Option(
        name: .customShort("y"),
        help: ArgumentHelp(
            "Print the recipient of each identity in this file (\"-\" for standard input).", valueName: "identity-file")
    )
    var identityFile: String?

    func validate() throws {
        if identityFile != nil && output != nil {
            throw ValidationError("-y prints to standard output; it cannot be combined with -o")
        }
    }

    /// What -y prints: the age recipient where the key is one (SSH keys'
    /// OpenSSH lines are), otherwise the public key in PEM (SPKI).
    static func publicText(of key: AsymmetricPrivateKey) throws -> String {
        switch key {
        case .ed25519, .rsa: return try OpenSSH.publicKeyLine(key.publicKey) + "\n"
        case .p256(let key):
            let agreement = try P256.KeyAgreement.PrivateKey(rawRepresentation: key.rawRepresentation)
            return P256Tag.Identity(privateKey: agreement).recipient.description + "\n"
        default: return String(decoding: try KeyFiles.encode(key.publicKey, as: .spki), as: UTF8.self)
        }
    }

    func run() throws {
        if let identityFile {
            let bytes = try Input.readAll(path: identityFile, what: "the key file")
            if let text = String(validating: bytes, as: UTF8.self), text.contains("SECRET-KEY-") {
                for identity in try AgeKeys.identities(fileContents: text, name: identityFile) {
                    switch identity {
                    case let x25519 as X25519.Identity: print(x25519.recipient)
                    case let hybrid as MLKEM768X25519.Identity: print(hybrid.recipient)
                    case let tagged as MLKEM768P256Tag.Identity: print(tagged.recipient)
                    default: continue
                    }
                }
                return
            }
            let key: AsymmetricPrivateKey
            do { key = try KeyFiles.privateKey(bytes) } catch let error as CofferError {
                throw error.prefixed(identityFile)
            }
            print(try Self.publicText(of: key), terminator: "")
            return
        }
        let created = ISO8601DateFormatter().string(from: Date())
        let recipient: String
        let text: String
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
        case .ed25519:
            let key = AsymmetricPrivateKey.ed25519(Curve25519.Signing.PrivateKey())
            recipient = try Self.publicText(of: key).trimmingCharacters(in: .newlines)
            text = try OpenSSH.privateKeyPEM(key)
        case .rsa2048, .rsa3072, .rsa4096:
            let bits = keyType == .rsa2048 ? 2048 : keyType == .rsa3072 ? 3072 : 4096
            let key = AsymmetricPrivateKey.rsa(try _RSA.Signing.PrivateKey(keySize: .init(bitCount: bits)))
            recipient = try Self.publicText(of: key).trimmingCharacters(in: .newlines)
            text = String(decoding: try KeyFiles.encode(key, as: .pkcs8), as: UTF8.self)
        case .mldsa65:
            let key = AsymmetricPrivateKey.mldsa65(try MLDSA65.PrivateKey())
            recipient = "\n" + (try Self.publicText(of: key))
            text = String(decoding: try KeyFiles.encode(key, as: .pkcs8), as: UTF8.self)
        }
        if let output, output != "-" {
            // An identity never replaces an existing file; a device, FIFO or
            // descriptor (-o /dev/fd/3) is written through.
            do {
                try AgeKeys.writeIdentityFile(text, to: output)
            } catch let error as CofferError where error.code == .refused {
                throw CLIFailure(
                    "\(output) already exists; refusing to overwrite an identity file",
                    hint: "choose another name, or delete the old file if you are sure no file needs it",
                    status: CLIFailure.refusedStatus)
            }
            StandardError.write("Public key: \(recipient)\n")
        } else {
            if !Output.isTerminal { StandardError.write("Public key: \(recipient)\n") }
            print(text, terminator: "")
        }
    }
}
