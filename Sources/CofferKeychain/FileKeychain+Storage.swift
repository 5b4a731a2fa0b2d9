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

/// `open(2)`, named apart from the `open` members in scope.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    #if canImport(Glibc)
    Glibc.open(path, flags, mode)
    #else
    Darwin.open(path, flags, mode)
    #endif
}

// FileKeychain's file I/O: the locks, the permission checks, reading,
// parsing, unlocking and writing the file (format in FileKeychain.swift and
// docs/keychain.md). Internal, not private, only so that it can live in its
// own file.
extension FileKeychain {

    func withLocked<T>(_ body: (inout Cache) throws -> T) throws -> T {
        try cache.withLock { cache throws -> T in try body(&cache) }
    }

    /// Creates the folder (and its parents) with mode 0700 when it is missing.
    func ensureDirectory() throws {
        var info = stat()
        guard lstat(directory, &info) != 0 else { return }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw KeychainError(.io, "cannot create the keychain folder \(directory)")
        }
    }

    func checkDirectory() throws {
        var info = stat()
        guard lstat(directory, &info) == 0 else {
            throw KeychainError(.io, "the keychain folder \(directory) does not exist")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw KeychainError(.insecurePermissions, "the keychain folder \(directory) is a symlink or not a folder")
        }
        guard info.st_uid == geteuid() else {
            throw KeychainError(
                .insecurePermissions,
                "the keychain folder \(directory) belongs to another user (uid \(info.st_uid)); it must be yours")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw KeychainError(
                .insecurePermissions,
                "the keychain folder \(directory) is open to other users (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 700 it"
            )
        }
    }

    /// Runs `body` holding the exclusive lock, after sweeping stale temporary files.
    func withWriteLock<T>(_ body: (inout Cache) throws -> T) throws -> T {
        try withLocked { cache in
            try checkDirectory()
            do {
                return try AtomicFile.withExclusiveLock(on: path) { try body(&cache) }
            } catch let error as CofferError where error.code == .insecurePermissions {
                throw KeychainError(.insecurePermissions, error.description)
            } catch let error as CofferError where error.code == .io {
                throw KeychainError(.io, error.description)
            }
        }
    }

    func modify(_ change: (inout ItemStore) throws -> Void) throws {
        try withWriteLock { cache in
            var (store, slots, dataKey, generation) = try load(&cache, trusting: false)
            try change(&store)
            try write(store, slots: slots, dataKey: dataKey, generation: generation + 1, replace: true, &cache)
        }
    }

    func read() throws -> ItemStore {
        try withLocked { cache in
            try checkDirectory()
            return try load(&cache, trusting: true).store
        }
    }

    /// The file's bytes, or nil when `trusting` its identity and that
    /// matches the last file read or written.
    func readFile(trusting: Bool, lastIdentity: [Int64]?) throws -> (bytes: [UInt8]?, identity: [Int64]) {
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
        // Owner and mode: the library's one check for files that hold secrets.
        do {
            try PrivateFile.check(descriptor: descriptor, path: path, what: "the keychain file")
        } catch let error as CofferError {
            throw KeychainError(error.code == .insecurePermissions ? .insecurePermissions : .io, error.description)
        }
        guard info.st_size <= 256 << 20 else {
            throw KeychainError(.corrupted, "\(path) is larger than a keychain can be (256 MiB)")
        }
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
    func load(_ cache: inout Cache, trusting: Bool, checkRollback: Bool = true) throws
        -> Loaded
    {
        let mark = checkRollback ? try guarded { try rollbackGuard?.highWaterMark(for: guardKey) } : nil
        let (read, identity) = try readFile(trusting: trusting, lastIdentity: cache.lastRead?.identity)
        let loaded: Loaded
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
            throw KeychainError(
                .rolledBack,
                "\(path) is generation \(loaded.generation), but generation \(mark) was already written: an older copy was put back in its place"
            )
        }
        return loaded
    }

    func write(
        _ store: ItemStore, slots: [KeySlot], dataKey: SymmetricKey, generation: UInt64, replace: Bool,
        _ cache: inout Cache
    ) throws {
        let slotBytes = slots.flatMap(\.serialized)
        let header =
            FileKeychain.magic + [FileKeychain.version] + withUnsafeBytes(of: generation.bigEndian, Array.init)
            + [UInt8(slots.count)] + slotBytes
        let items = try JSONEncoder().encode(store)
        let body = try AES.GCM._SIV.seal(items, using: dataKey, nonce: AES.GCM._SIV.Nonce(), authenticating: header)
            .combined
        let file: AtomicFile
        do { file = try AtomicFile(destination: path, mode: 0o600) } catch let error as CofferError {
            throw KeychainError(.io, error.description)
        }
        var sink = file.sink
        do {
            try sink.write(header)
            try sink.write(Array(body))
            try file.commit(replace: replace)
        } catch let error as CofferError {
            file.abort()
            throw KeychainError(.io, "\(path) was not changed: \(error)")
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
            cache.lastRead = (
                [Int64(info.st_dev), Int64(info.st_ino), Int64(info.st_size)] + modified, digest,
                (store, slots, dataKey, generation)
            )
            cache.cached = (slotBytes, dataKey, slots)
        }
    }
}
