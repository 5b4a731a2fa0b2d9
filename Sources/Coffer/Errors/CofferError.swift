import Foundation

/// The one error type of the `Coffer` module.
///
/// ```swift
/// do { try Age.decrypt(ciphertext, identities: ids) }
/// catch let error as CofferError where error.code == .noIdentityMatched { … }
/// ```
///
/// `Code` is an open set of static values rather than an enum, so adding a
/// code in a later release breaks no caller's `switch`. Two errors are equal
/// when their codes are equal. Programs branch on `code`; the reason is for
/// people and is shown only through `description` (`debugDescription` adds
/// the code and the call site). It never contains secret bytes (keys,
/// passphrases, plaintext).
public struct CofferError: Error, Hashable, CustomStringConvertible, CustomDebugStringConvertible, Sendable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Input that does not follow its format: says what and where.
        public static let malformed = Code("malformed")
        /// An age header that breaks the format's grammar or rules.
        public static let malformedHeader = Code("malformedHeader")
        /// ASCII armor that is not the strict encoding age requires.
        public static let malformedArmor = Code("malformedArmor")
        /// A payload that is truncated, extended or otherwise not a valid STREAM.
        public static let malformedPayload = Code("malformedPayload")
        /// The header MAC does not verify under the unwrapped file key.
        public static let headerAuthenticationFailed = Code("headerAuthenticationFailed")
        /// A payload chunk failed to authenticate: wrong key or tampered data.
        public static let payloadAuthenticationFailed = Code("payloadAuthenticationFailed")
        /// No identity (or passphrase) opened any recipient stanza.
        public static let noIdentityMatched = Code("noIdentityMatched")
        /// A version, algorithm or parameter this library does not accept.
        public static let unsupported = Code("unsupported")
        /// A call that breaks the API's contract (for example mixing a
        /// passphrase with other recipients).
        public static let invalidArgument = Code("invalidArgument")
        /// Reading or writing failed.
        public static let io = Code("io")
        /// A file the caller must trust is a symlink or open to other users.
        public static let insecurePermissions = Code("insecurePermissions")
        /// The password (or key-encryption key) does not unlock the key
        /// ring, or no passphrase given opens a passphrase-encrypted age
        /// file; distinct from a file whose sealed body was tampered with.
        public static let wrongPassword = Code("wrongPassword")
        /// The value was sealed under a key that has been disabled.
        public static let keyDisabled = Code("keyDisabled")
        /// The value names a key this key ring does not hold.
        public static let keyNotFound = Code("keyNotFound")
        /// A key ring or keychain file is older than one this user has
        /// already seen at that place: someone put back an earlier copy.
        public static let rolledBack = Code("rolledBack")
        /// A record store's own state (its schema, keys, index roots,
        /// epoch or job) does not verify under the store's keys: someone
        /// without them changed, added or removed a row of it.
        public static let stateAuthenticationFailed = Code("stateAuthenticationFailed")
        /// The operation would lose data and the caller did not confirm it.
        public static let refused = Code("refused")
        /// Where a key is held (an HSM's token) cannot be reached now: the
        /// token is gone or its module failed. Trying again later may work.
        public static let keyHolderUnavailable = Code("keyHolderUnavailable")
    }

    public var code: Code
    /// For people; never contains secret bytes.
    private var reason: String
    /// Where in Coffer the error was raised (`#fileID`, `#line`).
    public var file: String
    public var line: Int

    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

    /// The reason, for people: what failed and where.
    public var description: String { reason }
    public var debugDescription: String { "CofferError(\(code), \"\(reason)\", at \(file):\(line))" }

    /// The same error (code and call site) with `context` put in front of
    /// its reason, as in "keys.txt: line 4 is not …".
    public func prefixed(_ context: String) -> CofferError {
        var copy = self
        copy.reason = "\(context): \(reason)"
        return copy
    }

    public static func == (lhs: CofferError, rhs: CofferError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

extension CofferError {
    /// The failure classes of the age test kit (CCTV): every decryption
    /// error falls in exactly one.
    public enum AgeFailureClass: String, Sendable {
        case noMatch = "no match"
        case hmacFailure = "HMAC failure"
        case headerFailure = "header failure"
        case payloadFailure = "payload failure"
        case armorFailure = "armor failure"
        case other = "other"
    }

    public var ageFailureClass: AgeFailureClass {
        switch code {
        case .noIdentityMatched, .wrongPassword: .noMatch
        case .headerAuthenticationFailed: .hmacFailure
        case .malformedHeader, .unsupported: .headerFailure
        case .malformedPayload, .payloadAuthenticationFailed: .payloadFailure
        case .malformedArmor: .armorFailure
        default: .other
        }
    }
}
