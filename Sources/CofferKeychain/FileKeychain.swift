import Coffer
import Crypto
import CryptoExtras
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The default keychain on Linux: one encrypted file per keychain
/// (docs/keychain.md).
///
///     "CKC1" ‖ version 2 ‖ generation (8) ‖ slot count (1) ‖ key slots
///     ‖ nonce 12 ‖ AES-256-GCM-SIV(items) ‖ tag 16          (AAD = the whole header)
///
/// Each `KeySlot` (Coffer; docs/key-slots.md, binding "CKC1" ‖ 2) wraps the same
/// random data key for a passphrase (scrypt or PBKDF2) or a key; the body
/// is sealed with the data key and authenticates the header. Version 1
/// files (fixed-size slots of their own) are read and rewritten as
/// version 2 by the next write (`FileKeychain+Format.swift`). Writes hold an exclusive `flock` on a separate
/// lock file, re-read, apply, write a 0600 temporary file, fsync, rename,
/// fsync the folder, all under the lock (`FileKeychain+Storage.swift`).
/// Reads refuse files or folders open to others, symlinks, and KDF
/// parameters above the cap, before any work.
public final class FileKeychain: Keychain, Sendable {
    public let path: String
    let directory: String
    let secret: UnlockSecret
    /// Where the highest generation written is kept (the per-user state
    /// file by default); an older file at `path` is `rolledBack`.
    public let rollbackGuard: (any RollbackGuard)?
    /// At most this many key slots are tried: each may cost a KDF run.
    static let maximumSlots = 8
    /// What this object remembers between calls, behind one mutex.
    struct Cache: Sendable {
        /// The data key, and the slot bytes it came from (re-derived only when they change).
        var cached: (slotBytes: [UInt8], dataKey: SymmetricKey, slots: [KeySlot])?
        /// The last file read or written: its identity (device, inode, size,
        /// mtime) for lock-free reads, and the SHA-256 of its bytes, which a
        /// read-modify-write compares before reusing the decrypted items (an
        /// inode number and a coarse mtime can both repeat).
        var lastRead:
            (
                identity: [Int64], digest: [UInt8],
                loaded: Loaded
            )?
    }
    let cache = Locked(Cache())

    /// A keychain's contents as read: the items, the key slots, the data key and the generation.
    typealias Loaded = (store: ItemStore, slots: [KeySlot], dataKey: SymmetricKey, generation: UInt64)

    static let magic = Array("CKC1".utf8)
    static let version: UInt8 = 2

    /// `COFFER_KEYCHAIN_DIR`, else `$XDG_DATA_HOME/coffer/keychains`, else `~/.local/share/coffer/keychains`.
    public static var defaultDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let directory = environment["COFFER_KEYCHAIN_DIR"], !directory.isEmpty { return directory }
        let data =
            environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? (NSHomeDirectory() + "/.local/share")
        return data + "/coffer/keychains"
    }

    /// The file of the keychain called `name` in the default folder.
    public static func path(named name: String) throws -> String {
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix(".") else {
            throw KeychainError(.invalidArgument, "a keychain name is a plain file name (no /, not starting with .)")
        }
        return defaultDirectory + "/" + name + ".keychain"
    }

    init(path: String, secret: UnlockSecret, rollbackGuard: (any RollbackGuard)?) {
        self.path = path
        directory =
            (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
        self.secret = secret
        self.rollbackGuard = rollbackGuard
    }

    /// The key of this keychain's rollback mark: its path with the folder made canonical.
    var guardKey: String {
        let folder =
            realpath(directory, nil).map { pointer in
                defer { free(pointer) }
                return String(cString: pointer)
            } ?? directory
        return "keychain:" + folder + "/" + (path as NSString).lastPathComponent
    }

    /// Creates a new, empty keychain file (its folder too, 0700); never overwrites.
    ///
    /// ```swift
    /// let keychain = try FileKeychain.create(path: path, secret: .password("correct horse battery staple"))
    /// ```
    public static func create(
        path: String, secret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt,
        rollbackGuard: (any RollbackGuard)? = StateFileRollbackGuard.user
    ) throws -> FileKeychain {
        let keychain = FileKeychain(path: path, secret: secret, rollbackGuard: rollbackGuard)
        try keychain.ensureDirectory()
        try keychain.withWriteLock { cache in
            var exists = stat()
            guard lstat(path, &exists) != 0 else { throw KeychainError(.duplicateItem, "\(path) already exists") }
            let dataKey = SymmetricKey(size: .bits256)
            let slots = [try FileKeychain.slot(for: secret, dataKey: dataKey, kdf: kdf)]
            try keychain.write(ItemStore(), slots: slots, dataKey: dataKey, generation: 1, replace: false, &cache)
            try keychain.guarded { try keychain.rollbackGuard?.reset(keychain.guardKey, to: 1) }
        }
        return keychain
    }

    /// Opens an existing keychain and checks that `secret` unlocks it.
    ///
    /// ```swift
    /// let keychain = try FileKeychain.open(path: path, secret: .password(typed))
    /// let token = try keychain.copyData(.password(service: "api", account: "me"))
    /// ```
    public static func open(
        path: String, secret: UnlockSecret,
        rollbackGuard: (any RollbackGuard)? = StateFileRollbackGuard.user
    ) throws -> FileKeychain {
        let keychain = FileKeychain(path: path, secret: secret, rollbackGuard: rollbackGuard)
        _ = try keychain.read()
        return keychain
    }

    // MARK: Keychain

    public func add(_ item: KeychainItem, data: SecretBytes) throws { try modify { try $0.add(item, data: data) } }
    public func copyMatching(_ query: KeychainQuery) throws -> [KeychainItem] { try read().copyMatching(query) }
    public func copyData(_ query: KeychainQuery) throws -> SecretBytes { try read().copyData(query) }
    public func update(_ query: KeychainQuery, with changes: KeychainChanges) throws {
        try modify { try $0.update(query, with: changes) }
    }
    public func delete(_ query: KeychainQuery) throws { try modify { try $0.delete(query) } }

    /// Replaces the key slot with one for a new passphrase or key file,
    /// around a new random data key, and re-seals the items under it. An
    /// old copy of the file and the old secret therefore open nothing
    /// written after the change; what the old copy itself held stays
    /// exposed to whoever has both (docs/keychain.md, "Threat model").
    public func changeSecret(to newSecret: UnlockSecret, kdf: PasswordKDF = .defaultScrypt) throws -> FileKeychain {
        try withWriteLock { cache in
            let (store, _, _, generation) = try load(&cache, trusting: false)
            let dataKey = SymmetricKey(size: .bits256)
            let slots = [try FileKeychain.slot(for: newSecret, dataKey: dataKey, kdf: kdf)]
            try write(store, slots: slots, dataKey: dataKey, generation: generation + 1, replace: true, &cache)
        }
        return try FileKeychain.open(path: path, secret: newSecret, rollbackGuard: rollbackGuard)
    }

    /// Accepts the keychain file at `path` as it is now, even if older than
    /// the rollback mark (a backup restored on purpose), after checking that
    /// `secret` opens it. Returns its generation.
    public static func acceptCurrentGeneration(
        path: String, secret: UnlockSecret,
        rollbackGuard: (any RollbackGuard)? = StateFileRollbackGuard.user
    ) throws -> UInt64 {
        try FileKeychain(path: path, secret: secret, rollbackGuard: rollbackGuard).acceptCurrentGeneration()
    }

    /// Accepts the file as it is now, even if older than the rollback mark
    /// (a backup restored on purpose). Returns its generation.
    public func acceptCurrentGeneration() throws -> UInt64 {
        try withWriteLock { cache in
            let generation = try load(&cache, trusting: false, checkRollback: false).generation
            try guarded { try rollbackGuard?.reset(guardKey, to: generation) }
            return generation
        }
    }

    /// Runs a rollback-guard call, its errors as keychain errors.
    func guarded<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as CofferError {
            throw KeychainError(
                error.code == .rolledBack
                    ? .rolledBack : error.code == .insecurePermissions ? .insecurePermissions : .io, error.description)
        }
    }

    /// The generation counter: how many writes the file has seen.
    public func generation() throws -> UInt64 {
        try withLocked { cache in try load(&cache, trusting: true).generation }
    }
}
