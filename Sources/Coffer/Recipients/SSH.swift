import Crypto
import CryptoExtras
import Foundation

/// age's SSH recipient types (age-encryption.org/v1, "ssh-rsa" and
/// "ssh-ed25519" stanzas), for people who already have SSH keys. Both put
/// a tag in the stanza, SHA-256(SSH wire public key)[:4], so files
/// encrypted to SSH keys are linkable to the key by anyone who has it.
public enum SSHRecipients {
    static func tag(wire: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: wire).prefix(4)) }

    /// A recipient from an OpenSSH public key line (`ssh-ed25519 AAAA…` or `ssh-rsa AAAA…`).
    public static func recipient(publicKeyLine line: String) throws -> any Recipient {
        let (key, _) = try OpenSSH.parsePublicKeyLine(line)
        switch key {
        case .ed25519(let key): return try SSHEd25519.Recipient(publicKey: key)
        case .rsa(let key): return try SSHRSA.Recipient(publicKey: key)
        default:
            throw CofferError(
                .unsupported, "age encrypts only to ssh-ed25519 and ssh-rsa SSH keys, not \(key.algorithm)")
        }
    }
}

/// The ssh-ed25519 stanza: `-> ssh-ed25519 TAG SHARE`, X25519 against the
/// Ed25519 key mapped to Montgomery form, the shared secret tweaked by a
/// second X25519 with tweak = HKDF-SHA-256(ikm = "", salt = wire key,
/// info = label), and the file key sealed with ChaCha20-Poly1305 under
/// HKDF-SHA-256(tweaked secret, salt = share ‖ converted key, info = label).
public enum SSHEd25519 {
    static let stanzaType = "ssh-ed25519"
    static let label = Array("age-encryption.org/v1/ssh-ed25519".utf8)

    /// HKDF with an empty input key: one HMAC for extract, one for expand.
    static func tweak(wire: [UInt8]) throws -> Curve25519.KeyAgreement.PrivateKey {
        let prk = HMAC<SHA256>.authenticationCode(for: [UInt8](), using: SymmetricKey(data: wire))
        let okm = HMAC<SHA256>.authenticationCode(for: label + [1], using: SymmetricKey(data: Array(prk)))
        return try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: Array(okm))
    }

    static func wrapKey(secret: SharedSecret, tweak: Curve25519.KeyAgreement.PrivateKey, share: Data, converted: Data)
        throws -> SymmetricKey?
    {
        let point = try secret.withUnsafeBytes { try Curve25519.KeyAgreement.PublicKey(rawRepresentation: Array($0)) }
        guard let tweaked = try? tweak.sharedSecretFromKeyAgreement(with: point),
            !tweaked.withUnsafeBytes({ $0.allSatisfy { $0 == 0 } })
        else { return nil }
        return tweaked.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: share + converted, sharedInfo: label, outputByteCount: 32)
    }

    public struct Recipient: Coffer.Recipient {
        let wire: [UInt8]
        let converted: Curve25519.KeyAgreement.PublicKey

        public init(publicKey: Curve25519.Signing.PublicKey) throws {
            wire = try OpenSSH.wireEncoding(.ed25519(publicKey))
            converted = try Ed25519Conversion.x25519PublicKey(fromEd25519: publicKey.rawRepresentation)
        }

        public func wrap(_ fileKey: FileKey) throws -> [Stanza] {
            let ephemeral = Curve25519.KeyAgreement.PrivateKey()
            let share = ephemeral.publicKey.rawRepresentation
            let secret = try ephemeral.sharedSecretFromKeyAgreement(with: converted)
            guard
                let key = try wrapKey(
                    secret: secret, tweak: try tweak(wire: wire), share: share, converted: converted.rawRepresentation)
            else {
                throw CofferError(.malformed, "the ssh-ed25519 key gives an all-zero shared secret")
            }
            return [
                Stanza(
                    validated: stanzaType,
                    arguments: [Base64.encodeString(SSHRecipients.tag(wire: wire)), Base64.encodeString(share)],
                    body: try FileKeyWrap.seal(fileKey, with: key))
            ]
        }
    }

    public struct Identity: Coffer.Identity, CustomStringConvertible, CustomDebugStringConvertible {
        let privateKey: Curve25519.KeyAgreement.PrivateKey
        let recipient: Recipient

        public init(privateKey: Curve25519.Signing.PrivateKey) throws {
            self.privateKey = try Ed25519Conversion.x25519PrivateKey(fromEd25519: privateKey)
            recipient = try Recipient(publicKey: privateKey.publicKey)
        }

        public var description: String { "SSHEd25519.Identity(<redacted>)" }
        public var debugDescription: String { description }

        public func unwrap(_ stanzas: [Stanza]) throws -> FileKey? {
            let expectedTag = SSHRecipients.tag(wire: recipient.wire)
            for stanza in stanzas where stanza.type == stanzaType {
                try stanza.requireArgumentCount(2)
                let tag = try stanza.decodedArgument(0, byteCount: 4, name: "tag")
                let share = try stanza.decodedArgument(1, byteCount: 32, name: "share")
                try stanza.requireBodyCount(FileKey.byteCount + 16)
                guard tag == expectedTag else { continue }
                let peer = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: share)
                guard let secret = try? privateKey.sharedSecretFromKeyAgreement(with: peer),
                    !secret.withUnsafeBytes({ $0.allSatisfy { $0 == 0 } }),
                    let key = try wrapKey(
                        secret: secret, tweak: try tweak(wire: recipient.wire), share: Data(share),
                        converted: recipient.converted.rawRepresentation)
                else {
                    throw CofferError(.malformedHeader, "an ssh-ed25519 stanza's share is a low-order point")
                }
                if let fileKey = try FileKeyWrap.open(stanza.body, with: key) { return fileKey }
            }
            return nil
        }
    }
}

/// The ssh-rsa stanza: `-> ssh-rsa TAG`, the body RSAES-OAEP-SHA-256 of the
/// file key with label "age-encryption.org/v1/ssh-rsa".
public enum SSHRSA {
    static let stanzaType = "ssh-rsa"
    static let label = Data("age-encryption.org/v1/ssh-rsa".utf8)

    public struct Recipient: Coffer.Recipient {
        let publicKey: _RSA.Signing.PublicKey
        let wire: [UInt8]

        public init(publicKey: _RSA.Signing.PublicKey) throws {
            guard publicKey.keySizeInBits >= RSAKeys.minimumBits else {
                throw CofferError(.unsupported, "ssh-rsa keys must have at least \(RSAKeys.minimumBits) bits")
            }
            self.publicKey = publicKey
            wire = try OpenSSH.wireEncoding(.rsa(publicKey))
        }

        public func wrap(_ fileKey: FileKey) throws -> [Stanza] {
            let body = try fileKey.withUnsafeBytes {
                try RSAKeys.oaepSHA256Encrypt(Array($0), label: label, to: publicKey)
            }
            return [
                Stanza(
                    validated: stanzaType, arguments: [Base64.encodeString(SSHRecipients.tag(wire: wire))], body: body)
            ]
        }
    }

    public struct Identity: Coffer.Identity, CustomStringConvertible, CustomDebugStringConvertible {
        let privateKey: _RSA.Signing.PrivateKey
        let recipient: Recipient

        public init(privateKey: _RSA.Signing.PrivateKey) throws {
            self.privateKey = privateKey
            recipient = try Recipient(publicKey: privateKey.publicKey)
        }

        /// Failing ssh-rsa stanzas with this key's tag tried per header.
        static let maximumFailures = 16

        public var description: String { "SSHRSA.Identity(<redacted>)" }
        public var debugDescription: String { description }

        public func unwrap(_ stanzas: [Stanza]) throws -> FileKey? {
            let expectedTag = SSHRecipients.tag(wire: recipient.wire)
            let modulusBytes = (privateKey.keySizeInBits + 7) / 8
            var failures = 0
            for stanza in stanzas where stanza.type == stanzaType {
                try stanza.requireArgumentCount(1)
                guard try stanza.decodedArgument(0, byteCount: 4, name: "tag") == expectedTag else { continue }
                try stanza.requireBodyCount(modulusBytes)
                // Each try is an RSA private-key operation: a header cannot
                // make this identity do more than a few for nothing.
                guard failures < Identity.maximumFailures else {
                    throw CofferError(
                        .malformedHeader,
                        "more than \(Identity.maximumFailures) ssh-rsa stanzas carry this key's tag and fail to open; stopped"
                    )
                }
                WorkCounter.record(.rsaPrivate)
                guard let plaintext = try? RSAKeys.oaepSHA256Decrypt(stanza.body, label: label, with: privateKey) else {
                    failures += 1
                    continue
                }
                return try FileKey(unwrapped: plaintext)
            }
            return nil
        }
    }
}
