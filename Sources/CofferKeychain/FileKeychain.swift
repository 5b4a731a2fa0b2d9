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
///     "CKC1" ‖ version 1 ‖ generation (8) ‖ slot count (1)
///     ‖ slots: kind (0 key file, 1 scrypt) ‖ log2 N, r, p ‖ salt 16 ‖ wrapped data key (12 + 32 + 16)
///     ‖ nonce 12 ‖ AES-256-GCM-SIV(items) ‖ tag 16          (AAD = the whole header)
///
/// Each slot wraps the same random data key under a key from a passphrase
/// (scrypt) or a key file (HKDF); the body is sealed with the data key and
/// authenticates the header. Writes hold an exclusive `flock` on a separate
/// lock file, re-read, apply, write a 0600 temporary file, fsync, rename,
/// fsync the folder, and sweep stale temporary files, all under the lock.
/// Reads refuse files or folders open to others, symlinks, and KDF
/// parameters above the cap, before any work.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    #if canImport(Glibc)
    Glibc.open(path, flags, mode)
    #else
    Darwin.open(path, flags, mode)
    #endif
}

public final class FileKeychain: Keychain, Sendable {
    /// What unlocks a file keychain; never printed.
    public enum Secret: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        case password([UInt8])
        case keyFile(SymmetricKey)

        public var description: String {
            switch self {
            case .password: "FileKeychain.Secret.password(<redacted>)"
            case .keyFile: "FileKeychain.Secret.keyFile(<redacted>)"
            }
        }
        public var debugDescription: String { description }
        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .enum) }
    }

    public let path: String
    private let directory: String
    private let secret: Secret
    /// Where the highest generation written is kept (the per-user state
    /// file by default); an older file at `path` is `rolledBack`.
    public let rollbackGuard: (any RollbackGuard)?
    /// At most this many key slots are tried: each may cost a KDF run.
    static let maximumSlots = 8
    /// What this object remembers between calls, behind one mutex.
    struct Cache: Sendable {
        /// The data key, and the slot bytes it came from (re-derived only when they change).
        var cached: (slots: [UInt8], dataKey: SymmetricKey)?
        /// The last file read or written: its identity (device, inode, size,
        /// mtime) for lock-free reads, and the SHA-256 of its bytes, which a
        /// read-modify-write compares before reusing the decrypted items (an
        /// inode number and a coarse mtime can both repeat).
        var lastRead: (identity: [Int64], digest: [UInt8], loaded: (store: ItemStore, slots: [UInt8], dataKey: SymmetricKey, generation: UInt64))?
    }
    private let cache = Mutex(Cache())

    static let magic = Array("CKC1".utf8)
    static let version: UInt8 = 1
    static let slotSize = 1 + 3 + 16 + 60

    /// `COFFER_KEYCHAIN_DIR`, else `$XDG_DATA_HOME/coffer/keychains`, else `~/.local/share/coffer/keychains`.
    public static var defaultDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let directory = environment["COFFER_KEYCHAIN_DIR"], !directory.isEmpty { return directory }
        let data = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? (NSHomeDirectory() + "/.local/share")
        return data + "/coffer/keychains"
    }

    /// The file of the keychain called `name` in the default folder.
    public static func path(named name: String) throws -> String {
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix(".") else {
            throw KeychainError(.invalidArgument, "a keychain name is a plain file name (no /, not starting with .)")
        }
        return defaultDirectory + "/" + name + ".keychain"
    }

    init(path: String, secret: Secret, rollbackGuard: (any RollbackGuard)?) {
        self.path = path
        directory = (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
        self.secret = secret
        self.rollbackGuard = rollbackGuard
    }

    /// The key of this keychain's rollback mark: its path with the folder made canonical.
    private var guardKey: String {
        let folder = realpath(directory, nil).map { pointer in defer { free(pointer) }; return String(cString: pointer) } ?? directory
        return "keychain:" + folder + "/" + (path as NSString).lastPathComponent
    }

    /// Creates a new, empty keychain file (its folder too, 0700); never overwrites.
    public static func create(path: String, secret: Secret, kdf: PasswordKDF = .defaultScrypt,
                              rollbackGuard: (any RollbackGuard)? = StateFileRollbackGuard.user) throws -> FileKeychain {
        let keychain = FileKeychain(path: path, secret: secret, rollbackGuard: rollbackGuard)
        try keychain.ensureDirectory()
        try keychain.withWriteLock { cache in
            var exists = stat()
            guard lstat(path, &exists) != 0 else { throw KeychainError(.duplicateItem, "\(path) already exists") }
            let dataKey = SymmetricKey(size: .bits256)
            let slots = try FileKeychain.slot(for: secret, dataKey: dataKey, kdf: kdf)
            try keychain.write(ItemStore(), slots: slots, dataKey: dataKey, generation: 1, replace: false, &cache)
            cache.cached = (slots, dataKey)
            try keychain.guarded { try keychain.rollbackGuard?.reset(keychain.guardKey, to: 1) }
        }
        return keychain
    }

    /// Opens an existing keychain and checks that `secret` unlocks it.
    public static func open(path: String, secret: Secret,
                            rollbackGuard: (any RollbackGuard)? = StateFileRollbackGuard.user) throws -> FileKeychain {
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
    public func changeSecret(to newSecret: Secret, kdf: PasswordKDF = .defaultScrypt) throws -> FileKeychain {
        try withWriteLock { cache in
            let (store, _, _, generation) = try load(&cache, trusting: false)
            let dataKey = SymmetricKey(size: .bits256)
            let slots = try FileKeychain.slot(for: newSecret, dataKey: dataKey, kdf: kdf)
            try write(store, slots: slots, dataKey: dataKey, generation: generation + 1, replace: true, &cache)
        }
        return try FileKeychain.open(path: path, secret: newSecret, rollbackGuard: rollbackGuard)
    }

    /// Accepts the keychain file at `path` as it is now, even if older than
    /// the rollback mark (a backup restored on purpose), after checking that
    /// `secret` opens it. Returns its generation.
    public static func acceptCurrentGeneration(path: String, secret: Secret,
                                               rollbackGuard: (any RollbackGuard)? = StateFileRollbackGuard.user) throws -> UInt64 {
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
    private func guarded<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as CofferError {
            throw KeychainError(error.code == .rolledBack ? .rolledBack : error.code == .insecurePermissions ? .insecurePermissions : .io, error.reason)
        }
    }

    /// The generation counter: how many writes the file has seen.
    public func generation() throws -> UInt64 { try withLocked { cache in try load(&cache, trusting: true).generation } }

    // MARK: slots

    static func slotKey(_ secret: Secret, kind: UInt8, params: [UInt8], salt: [UInt8]) throws -> SymmetricKey {
        switch (secret, kind) {
        case let (.password(password), 1):
            return try PasswordKDF.scrypt(logN: params[0], r: params[1], p: params[2]).derive(password: password, salt: salt)
        case let (.keyFile(key), 0):
            return HKDF<SHA256>.deriveKey(inputKeyMaterial: key, salt: salt, info: Array("coffer keychain v1 key file slot".utf8), outputByteCount: 32)
        case (.password, 0):
            throw KeychainError(.authenticationFailed, "this keychain is locked with a key file, not a passphrase")
        case (.keyFile, 1):
            throw KeychainError(.authenticationFailed, "this keychain is locked with a passphrase, not a key file")
        default:
            throw KeychainError(.unsupportedVersion, "key slot kind \(kind) is not supported")
        }
    }

    static func slot(for secret: Secret, dataKey: SymmetricKey, kdf: PasswordKDF) throws -> [UInt8] {
        let salt = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        let kind: UInt8, params: [UInt8]
        switch (secret, kdf) {
        case (.keyFile, _): kind = 0; params = [0, 0, 0]
        case let (.password(password), .scrypt(logN, r, p)):
            guard !password.isEmpty else { throw KeychainError(.invalidArgument, "the passphrase is empty") }
            kind = 1; params = [logN, r, p]
        case (.password, .pbkdf2SHA256):
            throw KeychainError(.invalidArgument, "keychain passphrases use scrypt")
        }
        let key = try slotKey(secret, kind: kind, params: params, salt: salt)
        let wrapped = try dataKey.withUnsafeBytes {
            try AES.GCM._SIV.seal(Array($0), using: key, nonce: AES.GCM._SIV.Nonce(), authenticating: slotAAD(kind, params, salt)).combined
        }
        return [kind] + params + salt + Array(wrapped)
    }

    static func slotAAD(_ kind: UInt8, _ params: [UInt8], _ salt: [UInt8]) -> [UInt8] { Array("CKC1 slot".utf8) + [kind] + params + salt }

    // MARK: file I/O

    private func withLocked<T>(_ body: (inout Cache) throws -> T) throws -> T {
        try cache.withLock { cache throws -> T in try body(&cache) }
    }

    /// Creates the folder (and its parents) with mode 0700 when it is missing.
    private func ensureDirectory() throws {
        var info = stat()
        guard lstat(directory, &info) != 0 else { return }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw KeychainError(.io, "cannot create the keychain folder \(directory)")
        }
    }

    private func checkDirectory() throws {
        var info = stat()
        guard lstat(directory, &info) == 0 else { throw KeychainError(.io, "the keychain folder \(directory) does not exist") }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw KeychainError(.insecurePermissions, "the keychain folder \(directory) is a symlink or not a folder")
        }
        guard info.st_uid == geteuid() else {
            throw KeychainError(.insecurePermissions, "the keychain folder \(directory) belongs to another user (uid \(info.st_uid)); it must be yours")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw KeychainError(.insecurePermissions, "the keychain folder \(directory) is open to other users (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 700 it")
        }
    }

    /// Runs `body` holding the exclusive lock, after sweeping stale temporary files.
    private func withWriteLock<T>(_ body: (inout Cache) throws -> T) throws -> T {
        try withLocked { cache in
            try checkDirectory()
            do {
                return try AtomicFile.withExclusiveLock(on: path) { try body(&cache) }
            } catch let error as CofferError where error.code == .insecurePermissions {
                throw KeychainError(.insecurePermissions, error.reason)
            } catch let error as CofferError where error.code == .io {
                throw KeychainError(.io, error.reason)
            }
        }
    }

    private func modify(_ change: (inout ItemStore) throws -> Void) throws {
        try withWriteLock { cache in
            var (store, slots, dataKey, generation) = try load(&cache, trusting: false)
            try change(&store)
            try write(store, slots: slots, dataKey: dataKey, generation: generation + 1, replace: true, &cache)
        }
    }

    private func read() throws -> ItemStore {
        try withLocked { cache in
            try checkDirectory()
            return try load(&cache, trusting: true).store
        }
    }

    /// The file's bytes, or nil when `trusting` its identity and that
    /// matches the last file read or written.
    private func readFile(trusting: Bool, lastIdentity: [Int64]?) throws -> (bytes: [UInt8]?, identity: [Int64]) {
        let descriptor = systemOpen(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            switch errno {
            case ENOENT: throw KeychainError(.itemNotFound, "there is no keychain at \(path)")
            case ELOOP: throw KeychainError(.insecurePermissions, "the keychain file \(path) is a symlink")
            default: throw KeychainError(.io, "cannot open \(path): \(String(cString: strerror(errno)))")
            }
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw KeychainError(.insecurePermissions, "\(path) is not a regular file")
        }
        guard info.st_uid == geteuid() else {
            throw KeychainError(.insecurePermissions, "the keychain file \(path) belongs to another user (uid \(info.st_uid)); it must be yours")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw KeychainError(.insecurePermissions, "the keychain file \(path) is open to other users (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        guard info.st_size <= 256 << 20 else { throw KeychainError(.corrupted, "\(path) is larger than a keychain can be (256 MiB)") }
        #if canImport(Darwin)
        let modified = [Int64(info.st_mtimespec.tv_sec), Int64(info.st_mtimespec.tv_nsec)]
        #else
        let modified = [Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec)]
        #endif
        let identity = [Int64(info.st_dev), Int64(info.st_ino), Int64(info.st_size)] + modified
        if trusting, let lastIdentity, lastIdentity == identity { return (nil, identity) }
        var source = FileDescriptorSource(fileDescriptor: descriptor)
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size) + 1)
        let count = try bytes.withUnsafeMutableBytes { try source.readFully(into: $0) }
        return (Array(bytes.prefix(count)), identity)
    }

    /// Reads the keychain. `trusting`: reuse the last state when the
    /// file's identity is unchanged (reads); otherwise (under the write
    /// lock) reuse it only when the bytes are the same. The rollback mark
    /// is read before the file, so a concurrent writer raises no false alarm.
    private func load(_ cache: inout Cache, trusting: Bool, checkRollback: Bool = true) throws
        -> (store: ItemStore, slots: [UInt8], dataKey: SymmetricKey, generation: UInt64) {
        let mark = checkRollback ? try guarded { try rollbackGuard?.highWaterMark(for: guardKey) } : nil
        let (read, identity) = try readFile(trusting: trusting, lastIdentity: cache.lastRead?.identity)
        let loaded: (store: ItemStore, slots: [UInt8], dataKey: SymmetricKey, generation: UInt64)
        if let bytes = read {
            let digest = Array(SHA256.hash(data: bytes))
            if let lastRead = cache.lastRead, lastRead.digest == digest {
                loaded = lastRead.loaded
            } else {
                loaded = try parse(bytes, &cache)
            }
            cache.lastRead = (identity, digest, loaded)
        } else {
            loaded = cache.lastRead!.loaded
        }
        if let mark, loaded.generation < mark {
            throw KeychainError(.rolledBack, "\(path) is generation \(loaded.generation), but generation \(mark) was already written: an older copy was put back in its place")
        }
        return loaded
    }

    private func parse(_ bytes: [UInt8], _ cache: inout Cache) throws -> (store: ItemStore, slots: [UInt8], dataKey: SymmetricKey, generation: UInt64) {
        guard bytes.count >= 14, Array(bytes.prefix(4)) == FileKeychain.magic else {
            throw KeychainError(.corrupted, "\(path) is not a Coffer keychain (or its first bytes are damaged)")
        }
        guard bytes[4] == FileKeychain.version else {
            throw KeychainError(.unsupportedVersion, "keychain format version \(bytes[4]) is not supported (only \(FileKeychain.version))")
        }
        let generation = bytes[5..<13].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let slotCount = Int(bytes[13])
        guard slotCount <= FileKeychain.maximumSlots else {
            throw KeychainError(.corrupted, "\(path) declares \(slotCount) key slots; at most \(FileKeychain.maximumSlots) are read (refused before any work)")
        }
        let headerEnd = 14 + slotCount * FileKeychain.slotSize
        guard slotCount >= 1, bytes.count >= headerEnd + 28 else { throw KeychainError(.corrupted, "\(path) is truncated") }
        let slots = Array(bytes[14..<headerEnd])
        let dataKey: SymmetricKey
        if let cached = cache.cached, cached.slots == slots {
            dataKey = cached.dataKey
        } else {
            dataKey = try unlock(slots: slots, count: slotCount)
            cache.cached = (slots, dataKey)
        }
        let body: Data
        do {
            body = try AES.GCM._SIV.open(AES.GCM._SIV.SealedBox(combined: bytes[headerEnd...]), using: dataKey, authenticating: Array(bytes[..<headerEnd]))
        } catch {
            throw KeychainError(.corrupted, "\(path) does not authenticate: it was damaged or changed outside Coffer")
        }
        do {
            return (try JSONDecoder().decode(ItemStore.self, from: body), slots, dataKey, generation)
        } catch {
            throw KeychainError(.corrupted, "\(path)'s items do not parse")
        }
    }

    private func unlock(slots: [UInt8], count: Int) throws -> SymmetricKey {
        var lastError = KeychainError(.authenticationFailed, "no key slot of \(path) opens with this secret")
        for index in 0..<count {
            let slot = Array(slots[(index * FileKeychain.slotSize)..<((index + 1) * FileKeychain.slotSize)])
            let kind = slot[0], params = Array(slot[1..<4]), salt = Array(slot[4..<20])
            let key: SymmetricKey
            do { key = try FileKeychain.slotKey(secret, kind: kind, params: params, salt: salt) } catch let error as KeychainError {
                lastError = error
                continue
            } catch let error as CofferError where error.code == .unsupported {
                throw KeychainError(.corrupted, "\(path): \(error.reason)")
            } catch let error as CofferError {
                throw KeychainError(.corrupted, "\(path): \(error.reason)")
            }
            if let unwrapped = try? AES.GCM._SIV.open(AES.GCM._SIV.SealedBox(combined: slot[20...]), using: key,
                                                      authenticating: FileKeychain.slotAAD(kind, params, salt)) {
                return SymmetricKey(data: unwrapped)
            }
            lastError = KeychainError(.authenticationFailed, "wrong passphrase or key file for \(path) (or its key slot is damaged)")
        }
        throw lastError
    }

    private func write(_ store: ItemStore, slots: [UInt8], dataKey: SymmetricKey, generation: UInt64, replace: Bool,
                       _ cache: inout Cache) throws {
        var header = FileKeychain.magic + [FileKeychain.version]
        header += withUnsafeBytes(of: generation.bigEndian, Array.init)
        header.append(UInt8(slots.count / FileKeychain.slotSize))
        header += slots
        let items = try JSONEncoder().encode(store)
        let body = try AES.GCM._SIV.seal(items, using: dataKey, nonce: AES.GCM._SIV.Nonce(), authenticating: header).combined
        let file: AtomicFile
        do { file = try AtomicFile(destination: path, mode: 0o600) } catch let error as CofferError {
            throw KeychainError(.io, error.reason)
        }
        var sink = file.sink
        do {
            try sink.write(header)
            try sink.write(Array(body))
            try file.commit(replace: replace)
        } catch let error as CofferError {
            file.abort()
            throw KeychainError(.io, "\(path) was not changed: \(error.reason)")
        }
        if replace { try guarded { try rollbackGuard?.raise(guardKey, to: generation) } }
        let digest = Array(SHA256.hash(data: header + Array(body)))
        // Still under the write lock, so the file at `path` is the one just written.
        var info = stat()
        if lstat(path, &info) == 0 {
            #if canImport(Darwin)
            let modified = [Int64(info.st_mtimespec.tv_sec), Int64(info.st_mtimespec.tv_nsec)]
            #else
            let modified = [Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec)]
            #endif
            cache.lastRead = ([Int64(info.st_dev), Int64(info.st_ino), Int64(info.st_size)] + modified, digest, (store, slots, dataKey, generation))
            cache.cached = (slots, dataKey)
        }
    }
}
