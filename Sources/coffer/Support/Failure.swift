import ArgumentParser
import Coffer
import CofferKeychain
import Foundation

/// A failure of the command line itself (as opposed to the library's),
/// with the hint that tells the user what to do.
struct CLIFailure: Error {
    var message: String
    var hint: String?
    var status: Int32

    static let refusedStatus: Int32 = 6

    init(_ message: String, hint: String? = nil, status: Int32 = 1) {
        self.message = message
        self.hint = hint
        self.status = status
    }
}

/// A command that knows better than the general table what a library
/// error means for what it was doing.
protocol ErrorHinting {
    func hint(for error: CofferError) -> String?
}

/// Commands that read age files: a wrong password is the file's passphrase.
protocol ReadsAgeFiles: ErrorHinting {}
extension ReadsAgeFiles {
    func hint(for error: CofferError) -> String? {
        error.code == .wrongPassword
            ? "check the passphrase (--passphrase-file FILE, or type it when asked on a terminal)" : nil
    }
}

/// Commands that open sealed values: a failed authentication is most often
/// the wrong context or ring, not damage.
protocol OpensSealedValues: ErrorHinting {}
extension OpensSealedValues {
    func hint(for error: CofferError) -> String? {
        error.code == .payloadAuthenticationFailed
            ? "a value opens only with the --context it was sealed with, and only with its own key ring" : nil
    }
}

/// Exit statuses, documented in the README.
enum ExitStatus {
    static func of(_ error: CofferError) -> Int32 {
        switch error.code {
        case .noIdentityMatched, .wrongPassword, .keyNotFound: 2
        case .headerAuthenticationFailed, .payloadAuthenticationFailed, .malformedPayload, .rolledBack,
            .stateAuthenticationFailed:
            3
        case .malformedHeader, .malformedArmor, .malformed: 4
        case .unsupported: 5
        case .keyDisabled, .insecurePermissions, .refused: 6
        case .invalidArgument: 64
        default: 1
        }
    }

    /// The hint for `error` raised by `command`: the command's own when it
    /// has one (it knows what it was reading), else the general one. Hints
    /// depend on codes and commands, never on an error's reason text.
    static func hint(for error: CofferError, in command: (any ParsableCommand)?) -> String? {
        if let specific = (command as? any ErrorHinting)?.hint(for: error) { return specific }
        return hint(for: error)
    }

    static func hint(for error: CofferError) -> String? {
        switch error.code {
        case .noIdentityMatched:
            "pass the identity file the sender encrypted to with -i, or --passphrase-file for a passphrase-protected file"
        case .headerAuthenticationFailed, .payloadAuthenticationFailed, .malformedPayload:
            "the file is damaged or was tampered with; no output was kept"
        case .wrongPassword:
            "check the passphrase (--passphrase-file FILE) or the --kek-file"
        case .rolledBack:
            "restore the newest copy; if this older copy was restored on purpose, run 'coffer keyring accept-rollback' (or 'coffer keychain accept-rollback', 'coffer store accept-rollback')"
        case .stateAuthenticationFailed:
            "someone without the store's keys changed its schema, keys or job; restore the database from a backup"
        case .insecurePermissions:
            "files holding keys must be yours and closed to others: chmod 600 FILE"
        case .keyDisabled:
            "the key was disabled in the key ring; values under it must be rewrapped before disabling"
        case .malformedArmor:
            "armored files must be exactly as coffer or age wrote them; only whitespace may surround the block"
        default: nil
        }
    }
}

extension ExitStatus {
    /// Keychain errors on the same scale: not found 2, authentication 2,
    /// damaged 4, unsupported 5, refused (duplicate, insecure) 6, usage 64.
    static func of(_ error: KeychainError) -> Int32 {
        switch error.code {
        case .itemNotFound, .authenticationFailed: 2
        case .corrupted: 4
        case .rolledBack: 3
        case .unsupportedVersion: 5
        case .duplicateItem, .insecurePermissions, .interactionNotAllowed: 6
        case .invalidArgument: 64
        default: 1
        }
    }

    static func hint(for error: KeychainError) -> String? {
        switch error.code {
        case .authenticationFailed: "check the keychain passphrase (--passphrase-file FILE) or --key-file"
        case .insecurePermissions: "keychain files must be 0600 and their folder 0700, owned by you, and not symlinks"
        case .corrupted: "the keychain file was damaged; restore it from a backup"
        case .rolledBack:
            "restore the newest copy; if this older copy was restored on purpose, run 'coffer keychain accept-rollback'"
        case .interactionNotAllowed:
            "unlock the keyring in the desktop session (or start gnome-keyring-daemon --unlock with its password on stdin)"
        default: nil
        }
    }
}

enum StandardError {
    static func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func report(_ message: String, hint: String?) {
        write("coffer: error: \(message)\n")
        if let hint { write("coffer: hint: \(hint)\n") }
    }
}

extension Decrypt: ReadsAgeFiles {}
extension Rekey: ReadsAgeFiles {}
extension Open: OpensSealedValues {}
extension Rewrap: OpensSealedValues {}
