import Crypto
import CryptoExtras
import Foundation

/// OpenSSH key files: public key lines (`ssh-ed25519 AAAA… comment`,
/// RFC 4253 §6.6 / RFC 8709 / RFC 5656 wire blobs) and the
/// "openssh-key-v1" private key format (OpenSSH's PROTOCOL.key). Keys
/// protected with a passphrase are refused with an error that says so.
public enum OpenSSH {
    static let privateKeyLabel = "OPENSSH PRIVATE KEY"
    private static let magic = Array("openssh-key-v1\0".utf8)

    private static let curveNames: [(type: String, curve: String)] = [
        ("ecdsa-sha2-nistp256", "nistp256"), ("ecdsa-sha2-nistp384", "nistp384"), ("ecdsa-sha2-nistp521", "nistp521"),
    ]

    /// The wire blob of a public key (what a public key line base64-encodes).
    public static func wireEncoding(_ key: AsymmetricPublicKey) throws -> [UInt8] {
        var writer = SSHWireWriter()
        switch key {
        case .ed25519(let key):
            writer.string("ssh-ed25519")
            writer.string(Array(key.rawRepresentation))
        case .rsa(let key):
            let primitives = try key.getKeyPrimitives()
            writer.string("ssh-rsa")
            writer.mpint(unsigned: primitives.publicExponent)
            writer.mpint(unsigned: primitives.modulus)
        case .p256(let key):
            writer.string("ecdsa-sha2-nistp256")
            writer.string("nistp256")
            writer.string(Array(key.x963Representation))
        case .p384(let key):
            writer.string("ecdsa-sha2-nistp384")
            writer.string("nistp384")
            writer.string(Array(key.x963Representation))
        case .p521(let key):
            writer.string("ecdsa-sha2-nistp521")
            writer.string("nistp521")
            writer.string(Array(key.x963Representation))
        case .x25519, .mldsa65:
            throw CofferError(.unsupported, "OpenSSH has no \(key.algorithm) keys")
        }
        return writer.bytes
    }

    /// A public key line: `type base64 [comment]`.
    public static func publicKeyLine(_ key: AsymmetricPublicKey, comment: String = "") throws -> String {
        let wire = try wireEncoding(key)
        var reader = SSHWireReader(wire)
        let type = try reader.text()
        return "\(type) \(Data(wire).base64EncodedString())" + (comment.isEmpty ? "" : " \(comment)")
    }

    /// Parses a wire blob.
    public static func publicKey(wire: some Collection<UInt8>) throws -> AsymmetricPublicKey {
        var reader = SSHWireReader(wire)
        let type = try reader.text()
        let key = try readPublicKey(type: type, from: &reader)
        guard reader.isAtEnd else { throw CofferError(.malformed, "the \(type) public key has trailing bytes") }
        return key
    }

    private static func readPublicKey(type: String, from reader: inout SSHWireReader) throws -> AsymmetricPublicKey {
        switch type {
        case "ssh-ed25519":
            let raw = try reader.string()
            guard raw.count == 32, let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else {
                throw CofferError(.malformed, "an ssh-ed25519 public key must be 32 bytes")
            }
            return .ed25519(key)
        case "ssh-rsa":
            let e = try reader.positiveMPInt()
            let n = try reader.positiveMPInt()
            return .rsa(try RSAKeys.publicKey(n: n, e: e))
        default:
            if let entry = curveNames.first(where: { $0.type == type }) {
                guard try reader.text() == entry.curve else {
                    throw CofferError(.malformed, "the \(type) key names another curve")
                }
                let point = try reader.string()
                return try ECKeys.publicKey(curve: entry.curve, x963: point)
            }
            throw CofferError(
                .unsupported,
                "OpenSSH key type \"\(type)\" is not supported (ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256/384/521 are)")
        }
    }

    /// Parses `type base64 [comment]`; returns the key and its wire blob.
    public static func parsePublicKeyLine(_ line: String) throws -> (key: AsymmetricPublicKey, wire: [UInt8]) {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count >= 2, let wire = Data(base64Encoded: String(fields[1])) else {
            throw CofferError(.malformed, "not an OpenSSH public key line (expected \"TYPE BASE64 [COMMENT]\")")
        }
        let key = try publicKey(wire: wire)
        var reader = SSHWireReader(wire)
        guard try reader.text() == String(fields[0]) else {
            throw CofferError(.malformed, "the OpenSSH public key line's type does not match the key it holds")
        }
        return (key, Array(wire))
    }

    /// Parses an "OPENSSH PRIVATE KEY" PEM block's bytes.
    public static func privateKey(bytes: some Collection<UInt8>) throws -> AsymmetricPrivateKey {
        let bytes = Array(bytes)
        guard bytes.starts(with: magic) else { throw CofferError(.malformed, "not an openssh-key-v1 private key") }
        var reader = SSHWireReader(bytes.dropFirst(magic.count))
        let cipher = try reader.text()
        let kdf = try reader.text()
        _ = try reader.string()  // KDF options
        guard cipher == "none", kdf == "none" else {
            throw CofferError(
                .unsupported,
                "the OpenSSH private key is protected with a passphrase (\(cipher), \(kdf)); Coffer reads only unencrypted keys. Remove the passphrase on a copy with: ssh-keygen -p -N \"\" -f COPY"
            )
        }
        guard try reader.uint32() == 1 else {
            throw CofferError(.unsupported, "the OpenSSH file holds more than one key")
        }
        let publicWire = try reader.string()
        var section = SSHWireReader(try reader.string())
        guard reader.isAtEnd else { throw CofferError(.malformed, "the OpenSSH private key has trailing bytes") }
        guard try section.uint32() == (try section.uint32()) else {
            throw CofferError(.malformed, "the OpenSSH private key's check numbers differ (damaged, or encrypted)")
        }
        let type = try section.text()
        let key: AsymmetricPrivateKey
        switch type {
        case "ssh-ed25519":
            let publicKey = try section.string()
            let secret = try section.string()
            guard publicKey.count == 32, secret.count == 64, Array(secret.suffix(32)) == Array(publicKey),
                let parsed = try? Curve25519.Signing.PrivateKey(rawRepresentation: secret.prefix(32)),
                Array(parsed.publicKey.rawRepresentation) == Array(publicKey)
            else {
                throw CofferError(.malformed, "the ssh-ed25519 private key is inconsistent")
            }
            key = .ed25519(parsed)
        case "ssh-rsa":
            let n = try section.positiveMPInt()
            let e = try section.positiveMPInt()
            let d = try section.positiveMPInt()
            _ = try section.positiveMPInt()  // iqmp, recomputed by BoringSSL
            let p = try section.positiveMPInt()
            let q = try section.positiveMPInt()
            key = .rsa(try RSAKeys.privateKey(n: n, e: e, d: d, p: p, q: q))
        default:
            guard let entry = curveNames.first(where: { $0.type == type }) else {
                throw CofferError(
                    .unsupported,
                    "OpenSSH key type \"\(type)\" is not supported (ssh-ed25519, ssh-rsa, ecdsa-sha2-nistp256/384/521 are)"
                )
            }
            guard try section.text() == entry.curve else {
                throw CofferError(.malformed, "the \(type) key names another curve")
            }
            _ = try section.string()  // Q, checked below against the public blob
            key = try ECKeys.privateKey(curve: entry.curve, scalar: try section.positiveMPInt())
        }
        _ = try section.string()  // comment
        // Padding is 1, 2, 3, … up to the cipher block size (8 for "none").
        for (index, byte) in section.remaining.enumerated() where Int(byte) != index + 1 {
            throw CofferError(.malformed, "the OpenSSH private key's padding is wrong")
        }
        guard section.remaining.count < 8 else {
            throw CofferError(.malformed, "the OpenSSH private key's padding is too long")
        }
        guard try wireEncoding(key.publicKey) == Array(publicWire) else {
            throw CofferError(.malformed, "the OpenSSH private key does not match its public key")
        }
        return key
    }

    /// An unencrypted "OPENSSH PRIVATE KEY" PEM (Ed25519 and ECDSA keys).
    public static func privateKeyPEM(_ key: AsymmetricPrivateKey, comment: String = "") throws -> String {
        var section = SSHWireWriter()
        let check = UInt32.random(in: .min ... .max)
        section.uint32(check)
        section.uint32(check)
        switch key {
        case .ed25519(let key):
            let publicKey = Array(key.publicKey.rawRepresentation)
            section.string("ssh-ed25519")
            section.string(publicKey)
            section.string(Array(key.rawRepresentation) + publicKey)
        case .p256(let key):
            section.string("ecdsa-sha2-nistp256")
            section.string("nistp256")
            section.string(Array(key.publicKey.x963Representation))
            section.mpint(unsigned: key.rawRepresentation)
        case .p384(let key):
            section.string("ecdsa-sha2-nistp384")
            section.string("nistp384")
            section.string(Array(key.publicKey.x963Representation))
            section.mpint(unsigned: key.rawRepresentation)
        case .p521(let key):
            section.string("ecdsa-sha2-nistp521")
            section.string("nistp521")
            section.string(Array(key.publicKey.x963Representation))
            section.mpint(unsigned: key.rawRepresentation)
        case .rsa, .x25519, .mldsa65:
            throw CofferError(.unsupported, "Coffer writes \(key.algorithm) keys as PKCS#8, not in OpenSSH's format")
        }
        section.string(comment)
        var pad: UInt8 = 1
        while section.bytes.count % 8 != 0 {
            section.raw([pad])
            pad += 1
        }
        var writer = SSHWireWriter()
        writer.raw(magic)
        writer.string("none")
        writer.string("none")
        writer.string([UInt8]())
        writer.uint32(1)
        writer.string(try wireEncoding(key.publicKey))
        writer.string(section.bytes)
        // OpenSSH wraps this block at 70 columns; any width parses.
        return PEM.encode(label: privateKeyLabel, writer.bytes)
    }
}
