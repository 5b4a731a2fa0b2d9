import Coffer
import Foundation

#if canImport(Darwin)
import CofferKeychain
#endif

/// How a store's files are protected while the device is locked (Apple's
/// Data Protection classes); ignored where there are none (Linux).
public enum StoreFileProtection: String, Sendable, CaseIterable {
    /// Readable only while the device is unlocked.
    case complete
    /// Files open when the device locks stay readable; new ones cannot be opened.
    case completeUnlessOpen
    /// Readable from the first unlock after boot on (a background task, an extension).
    case completeUntilFirstUserAuthentication
    /// No protection beyond the device's own encryption.
    case none
}

extension RecordStore {
    /// The rollback guard a store uses unless told (docs/store.md, "The
    /// store's state"): on Apple platforms the keychain of this device
    /// (`KeychainRollbackGuard` over `AppleKeychain`, items readable after
    /// the first unlock and never in a backup), so that restoring a backup
    /// of the app's container, which carries the store, cannot carry its
    /// mark back with it; elsewhere the per-user state file
    /// (`StateFileRollbackGuard.user`).
    public static var defaultRollbackGuard: any RollbackGuard {
        #if canImport(Darwin)
        KeychainRollbackGuard(keychain: AppleKeychain())
        #else
        StateFileRollbackGuard.user
        #endif
    }

    /// Gives the store's file, its WAL and its shared memory `protection`
    /// (what `open(orCreate:)` does at each open; for a store opened with
    /// `open(sqlite:)`)
    /// (those that exist now). On Apple platforms only; nothing elsewhere.
    /// SQLite makes the WAL and shared-memory files again after the last
    /// connection closes, and a new file takes its folder's class: keep the
    /// store in a folder of its own with the same protection (docs/store.md).
    public static func protectFiles(at path: String, _ protection: StoreFileProtection) throws {
        try protect(path, protection)
    }

    static func protect(_ path: String, _ protection: StoreFileProtection) throws {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        let type: FileProtectionType =
            switch protection {
            case .complete: .complete
            case .completeUnlessOpen: .completeUnlessOpen
            case .completeUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
            case .none: .none
            }
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            do {
                try FileManager.default.setAttributes([.protectionKey: type], ofItemAtPath: file)
            } catch {
                throw CofferError(.io, "cannot give \(file) the protection \(protection.rawValue): \(error)")
            }
        }
        #endif
    }
}
