import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A key ring file on disk, read and changed safely:
///
/// ```swift
/// let store = KeyRingStore(path: "app.ckr", secret: .password(pw))
/// try store.create()                                  // never overwrites
/// let id = try store.modify { file in try file.update { try $0.rotate() } }
/// let ring = try store.read().keyRing
/// ```
///
/// - The path's symlinks are resolved for reading, writing and locking
///   alike, so a ring reached through a link never forks.
/// - `modify` is a read-modify-write under an exclusive lock on
///   `.NAME.lock`: processes changing one ring at once never lose one
///   another's keys, and `kill -9` at any point leaves the old or the new
///   file whole.
/// - The file must be a regular file owned by this user (or root) and
///   closed to others (`insecurePermissions` otherwise).
/// - Every write raises the generation; `rollbackGuard` keeps the highest
///   one written, and a read of an older copy fails with `rolledBack`.
public struct KeyRingStore: Sendable {
    public let path: String
    public let secret: UnlockSecret
    public let rollbackGuard: (any RollbackGuard)?

    /// - Parameters:
    ///   - path: the key ring file.
    ///   - secret: the password or key-encryption key that unlocks it.
    ///   - rollbackGuard: where the high-water mark lives; the per-user
    ///     state file by default (beside the KEK when the KEK is kept in a
    ///     keychain: `KeychainRollbackGuard`), nil for none.
    public init(
        path: String, secret: UnlockSecret, rollbackGuard: (any RollbackGuard)? = StateFileRollbackGuard.user
    ) {
        self.path = path
        self.secret = secret
        self.rollbackGuard = rollbackGuard
    }

    package static func guardKey(_ ringID: [UInt8]) -> String { "keyring:" + Hex.encode(ringID) }

    /// Creates the file with `keyRing` (a new ring by default); never
    /// overwrites an existing file (`refused`).
    ///
    /// ```swift
    /// let store = KeyRingStore(path: "notes.keyring", secret: .password("correct horse battery staple"))
    /// let file = try store.create()
    /// ```
    @discardableResult
    public func create(_ keyRing: KeyRing = KeyRing(), kdf: PasswordKDF = .defaultScrypt) throws -> KeyRingFile {
        let file = try KeyRingFile(keyRing: keyRing, secret: secret, kdf: kdf)
        try AtomicFile.withExclusiveLock(on: path) {
            try write(file, replace: false)
        }
        try rollbackGuard?.reset(Self.guardKey(file.ringID), to: file.generation)
        return file
    }

    /// Reads and unlocks the file; `rolledBack` when it is older than a
    /// generation already written.
    public func read() throws -> KeyRingFile { try read(bytes: readBytes(), unlocked: nil) }

    /// `bytes` unlocked (or, when they are the bytes `unlocked` came from,
    /// not again) and checked against the rollback mark.
    func read(bytes: [UInt8], unlocked: KeyRingFile?) throws -> KeyRingFile {
        // The mark is read before the file's generation is trusted, and
        // marks are raised only after a commit: no false alarm in a race.
        let marks = try KeyRingFile.peekGeneration(bytes).flatMap { peek in
            try rollbackGuard?.highWaterMark(for: Self.guardKey(peek.ringID))
        }
        let file = try unlocked ?? KeyRingFile(contents: bytes, secret: secret)
        if let mark = marks, file.generation < mark {
            throw CofferError(
                .rolledBack,
                "the key ring \(path) is generation \(file.generation), but generation \(mark) was already written: an older copy was put back in its place"
            )
        }
        return file
    }

    /// Read, change, write under the lock; the generation grows by one.
    ///
    /// ```swift
    /// try store.modify { file in try file.update { try $0.disable(oldKeyID) } }
    /// ```
    @discardableResult
    public func modify<T>(_ change: (inout KeyRingFile) throws -> T) throws -> T {
        try AtomicFile.withExclusiveLock(on: path) {
            var file = try read()
            let result = try change(&file)
            file.generation += 1
            try write(file, replace: true)
            try rollbackGuard?.raise(Self.guardKey(file.ringID), to: file.generation)
            return result
        }
    }

    /// Accepts the file as it is now, even if older than the mark (a
    /// backup restored on purpose): the mark becomes its generation.
    public func acceptCurrentGeneration() throws -> UInt64 {
        let bytes = try readBytes()
        let file = try KeyRingFile(contents: bytes, secret: secret)
        try rollbackGuard?.reset(Self.guardKey(file.ringID), to: file.generation)
        return file.generation
    }

    private func write(_ file: KeyRingFile, replace: Bool) throws {
        let output = try AtomicFile(destination: path, mode: 0o600)
        var sink = output.sink
        do {
            try sink.write(Array(try file.contents()))
            try output.commit(replace: replace)
        } catch let error as CofferError where error.code == .refused {
            throw CofferError(.refused, "\(path) already exists; refusing to overwrite a key ring")
        } catch {
            output.abort()
            throw error
        }
    }

    func readBytes() throws -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CofferError(.io, "cannot open the key ring \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        try PrivateFile.check(descriptor: descriptor, path: path, what: "the key ring")
        return try PrivateFile.readAll(descriptor: descriptor, limit: 1 << 20, path: path, what: "the key ring")
    }
}
