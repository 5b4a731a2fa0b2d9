import Crypto
import CryptoExtras
import Foundation

/// age's passphrase recipient and identity (c2sp.org/age, "The scrypt
/// recipient type"). A scrypt stanza must be the only one in its header,
/// so a file encrypted with a passphrase is authenticated by it alone.
public enum Scrypt {
    static let stanzaType = "scrypt"
    static let saltLabel = Array("age-encryption.org/v1/scrypt".utf8)
    /// age's default: 2^18, about a second of work.
    public static let defaultWorkFactor = 18
    /// The most a reader accepts by default: 2^22 costs 4 GiB of memory.
    public static let defaultMaximumWorkFactor = 22

    static func wrapKey(_ passphrase: [UInt8], salt: [UInt8], workFactor: Int) throws -> SymmetricKey {
        try KDF.Scrypt.deriveKey(
            from: passphrase, salt: saltLabel + salt, outputByteCount: 32,
            rounds: 1 << workFactor, blockSize: 8, parallelism: 1)
    }

    public struct Recipient: Coffer.Recipient, CustomStringConvertible {
        let passphrase: [UInt8]
        let workFactor: Int

        /// `workFactor` is log2(N), 1…30. Throws `invalidArgument` outside.
        public init(passphrase: some Sequence<UInt8>, workFactor: Int = Scrypt.defaultWorkFactor) throws {
            guard (1...30).contains(workFactor) else {
                throw CofferError(.invalidArgument, "the scrypt work factor must be between 1 and 30")
            }
            self.passphrase = Array(passphrase)
            guard !self.passphrase.isEmpty else { throw CofferError(.invalidArgument, "the passphrase is empty") }
            self.workFactor = workFactor
        }

        public var description: String { "Scrypt.Recipient(<redacted>, workFactor: \(workFactor))" }

        public func wrap(_ fileKey: FileKey) throws -> [Stanza] {
            var salt = [UInt8](repeating: 0, count: 16)
            salt.withUnsafeMutableBytes { randomBytes($0) }
            let key = try Scrypt.wrapKey(passphrase, salt: salt, workFactor: workFactor)
            let body = try FileKeyWrap.seal(fileKey, with: key)
            return [
                Stanza(
                    validated: Scrypt.stanzaType, arguments: [Base64.encodeString(salt), String(workFactor)], body: body
                )
            ]
        }
    }

    public struct Identity: Coffer.Identity, CustomStringConvertible {
        let passphrase: [UInt8]
        let maximumWorkFactor: Int

        public init(passphrase: some Sequence<UInt8>, maximumWorkFactor: Int = Scrypt.defaultMaximumWorkFactor) {
            self.passphrase = Array(passphrase)
            self.maximumWorkFactor = maximumWorkFactor
        }

        public var description: String { "Scrypt.Identity(<redacted>)" }

        public func unwrap(_ stanzas: [Stanza]) throws -> FileKey? {
            for stanza in stanzas where stanza.type == Scrypt.stanzaType {
                guard stanzas.count == 1 else {
                    throw CofferError(.malformedHeader, "a scrypt stanza must be the only stanza in the header")
                }
                guard stanza.arguments.count == 2 else {
                    throw CofferError(.malformedHeader, "a scrypt stanza must have exactly two arguments")
                }
                guard let salt = Base64.decode(stanza.arguments[0]), salt.count == 16 else {
                    throw CofferError(.malformedHeader, "a scrypt stanza's salt must be 16 bytes of canonical base64")
                }
                let text = Array(stanza.arguments[1].utf8)
                // Decimal, no sign, no leading zero: ^[1-9][0-9]*$.
                guard let first = text.first, first >= 0x31, first <= 0x39,
                    text.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), text.count <= 2,
                    let workFactor = Int(stanza.arguments[1])
                else {
                    throw CofferError(
                        .malformedHeader, "a scrypt stanza's work factor must be a decimal number without leading zeros"
                    )
                }
                // Refused before any work is done: the parameter is the attacker's.
                guard workFactor <= maximumWorkFactor else {
                    throw CofferError(
                        .unsupported, "the scrypt work factor \(workFactor) is above the limit of \(maximumWorkFactor)")
                }
                guard stanza.body.count == FileKey.byteCount + 16 else {
                    throw CofferError(.malformedHeader, "a scrypt stanza's body must be 32 bytes")
                }
                let key = try Scrypt.wrapKey(passphrase, salt: salt, workFactor: workFactor)
                if let fileKey = try FileKeyWrap.open(stanza.body, with: key) { return fileKey }
            }
            return nil
        }
    }
}
