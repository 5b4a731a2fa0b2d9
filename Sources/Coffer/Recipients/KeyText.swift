import Crypto
import Foundation

/// Parsing of the text forms of recipients and identities, and of the
/// files that hold them (one per line, `#` comments, blank lines).
public enum AgeKeys {
    /// A recipient from its text form (`age1…`, `age1pq1…`, `age1tag1…`,
    /// `age1tagpq1…`, or an OpenSSH `ssh-ed25519`/`ssh-rsa` public key line).
    public static func recipient(_ text: String) throws -> any Recipient {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("ssh-") || trimmed.hasPrefix("ecdsa-") {
            return try SSHRecipients.recipient(publicKeyLine: trimmed)
        }
        if trimmed.hasPrefix("age1pq1") { return try MLKEM768X25519.Recipient(trimmed) }
        if trimmed.hasPrefix("age1tag1") { return try P256Tag.Recipient(trimmed) }
        if trimmed.hasPrefix("age1tagpq1") { return try MLKEM768P256Tag.Recipient(trimmed) }
        if trimmed.hasPrefix("age1") { return try X25519.Recipient(trimmed) }
        // The text is not echoed: a secret pasted by mistake must not reach a log.
        throw CofferError(.malformed, "unknown recipient type (expected \"age1…\")")
    }

    /// An identity from its text form (`AGE-SECRET-KEY-1…`, `AGE-SECRET-KEY-PQ-1…`).
    public static func identity(_ text: String) throws -> any Identity {
        if text.hasPrefix("AGE-SECRET-KEY-1") { return try X25519.Identity(text) }
        if text.hasPrefix("AGE-SECRET-KEY-PQ-1") { return try MLKEM768X25519.Identity(text) }
        if text.hasPrefix("COFFER-TAGPQ-SECRET-KEY-1") { return try MLKEM768P256Tag.Identity(text) }
        throw CofferError(
            .malformed,
            "unknown identity type (expected \"AGE-SECRET-KEY-1…\", \"AGE-SECRET-KEY-PQ-1…\", \"COFFER-TAGPQ-SECRET-KEY-1…\", or one private key file: SSH Ed25519 or RSA, P-256)"
        )
    }

    /// The identity of one private key: an SSH key (Ed25519 or RSA) is an
    /// ssh-ed25519 / ssh-rsa identity, a P-256 key a p256tag identity.
    public static func identity(privateKey: AsymmetricPrivateKey) throws -> any Identity {
        switch privateKey {
        case .ed25519(let key): return try SSHEd25519.Identity(privateKey: key)
        case .rsa(let key): return try SSHRSA.Identity(privateKey: key)
        case .p256(let key):
            return P256Tag.Identity(
                privateKey: try P256.KeyAgreement.PrivateKey(rawRepresentation: key.rawRepresentation))
        default:
            throw CofferError(
                .unsupported,
                "a \(privateKey.algorithm) key is not an age identity (Ed25519 and RSA SSH keys and P-256 keys are)")
        }
    }

    /// The identities in an identity file: `AGE-SECRET-KEY-…` lines, or one
    /// private key file (SSH Ed25519/RSA → ssh-ed25519/ssh-rsa, P-256 →
    /// p256tag) in any format `KeyFiles` reads.
    public static func identities(fileBytes: some Collection<UInt8>, name: String = "the identity file") throws
        -> [any Identity]
    {
        let bytes = Array(fileBytes)
        if let text = String(validating: bytes, as: UTF8.self), !PEM.looksLikePEM(bytes) {
            return try identities(fileContents: text, name: name)
        }
        do { return [try identity(privateKey: try KeyFiles.privateKey(bytes))] } catch let error as CofferError {
            throw error.prefixed(name)
        }
    }

    /// The identities in an identity file's contents: `AGE-SECRET-KEY-…`
    /// lines, or one private key in PEM. Errors give the line number but
    /// never the line, which may hold a secret.
    public static func identities(fileContents: String, name: String = "the identity file") throws -> [any Identity] {
        if fileContents.contains("-----BEGIN") {
            do { return [try identity(privateKey: try KeyFiles.privateKey(Array(fileContents.utf8)))] } catch let error
                as CofferError
            {
                throw error.prefixed(name)
            }
        }
        let identities = try parseLines(fileContents, name: name, what: "identity", identity)
        guard !identities.isEmpty else { throw CofferError(.malformed, "\(name) holds no identity") }
        return identities
    }

    /// The recipients in a recipients file's contents.
    public static func recipients(fileContents: String, name: String = "the recipients file") throws -> [any Recipient]
    {
        let recipients = try parseLines(fileContents, name: name, what: "recipient", recipient)
        guard !recipients.isEmpty else { throw CofferError(.malformed, "\(name) holds no recipient") }
        return recipients
    }

    private static func parseLines<T>(_ contents: String, name: String, what: String, _ parse: (String) throws -> T)
        throws -> [T]
    {
        var result: [T] = []
        // Character-wise, "\r\n" is one newline, so CRLF files work too.
        for (number, line) in contents.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated()
        {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            do { result.append(try parse(trimmed)) } catch let error as CofferError {
                throw CofferError(error.code, "line \(number + 1) of \(name) is not a valid \(what): \(error)")
            }
        }
        return result
    }
}

extension AgeKeys {
    /// Writes an identity file (`AGE-SECRET-KEY-1…` lines, or a private key
    /// file's text) as `age-keygen -o` does: mode 0600, complete or not at
    /// all, and never over an existing file (`refused`), since losing an
    /// identity loses every file encrypted to it. A device, FIFO or open
    /// descriptor (`/dev/fd/3`) is written through.
    public static func writeIdentityFile(_ contents: String, to path: String) throws {
        let output = try OutputFile(path: path, mode: 0o600)
        var sink = output.sink
        do {
            try sink.write(Array(contents.utf8))
            try output.commit(replace: false)
        } catch {
            output.abort()
            throw error
        }
    }
}
