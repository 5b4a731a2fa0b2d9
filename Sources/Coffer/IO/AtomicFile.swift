import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a file so that, whatever happens (an error, `kill -9`, a power
/// cut after `commit` returned), the destination holds either its old
/// contents or the complete new ones, never a part.
///
/// ```swift
/// let file = try AtomicFile(destination: "out.age")
/// var sink = file.sink
/// try Age.encrypt(from: &input, to: &sink, recipients: rs)
/// try file.commit()          // or file.abort() on error
/// ```
///
/// - The destination is resolved first (``Destination``): a symlink is
///   followed, so the new file replaces the link's target and the link
///   stays; a device, FIFO or socket is refused (stream into those with
///   ``OutputFile``, never replace them).
/// - On Linux the bytes go to an unnamed `O_TMPFILE` in the destination's
///   folder: until `commit` no name exists, so a process killed mid-write
///   leaves nothing behind. Where the file system has no `O_TMPFILE`, a
///   named temporary `.NAME.coffer-` + 12 hex digits (O_EXCL|O_NOFOLLOW)
///   is used instead.
/// - Every temporary holds an `flock` for its writer's lifetime, so a
///   later writer can prove one stale (unlocked and older than two
///   seconds) and delete it (``sweepStaleTemporaries(of:)``); live ones are
///   never touched.
/// - `commit` fsyncs the file, gives it the destination's name (rename, or
///   link when it must not replace) and fsyncs the folder.
public final class AtomicFile {
    /// The path that is written: the requested one with symlinks resolved.
    public let destination: String
    private let directory: String
    private let descriptor: Int32
    /// The named temporary, or nil for an unnamed O_TMPFILE.
    private let temporary: String?
    private var finished = false

    /// - Parameters:
    ///   - requested: the path to write; a symlink is followed to its target.
    ///   - mode: permissions of the new file (0600 unless the caller has a
    ///     reason to share it).
    public init(destination requested: String, mode: mode_t = 0o600) throws {
        let resolved = try Destination.resolve(requested)
        guard case .file(let path) = resolved else {
            throw CofferError(
                .invalidArgument,
                "\(requested) is \(resolved.kindName), not a regular file; it cannot be replaced by a file")
        }
        destination = path
        directory = Destination.directory(of: path)
        AtomicFile.sweepStaleTemporaries(of: path)
        #if os(Linux)
        // O_TMPFILE is __O_TMPFILE | O_DIRECTORY; Glibc's module does not export it.
        let unnamed = open(directory, 0o20000000 | O_DIRECTORY | O_WRONLY | O_CLOEXEC, mode)
        if unnamed >= 0 {
            flock(unnamed, LOCK_EX | LOCK_NB)
            descriptor = unnamed
            temporary = nil
            return
        }
        #endif
        let name = AtomicFile.temporaryName(for: path)
        let named = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard named >= 0 else {
            throw CofferError(.io, "cannot create a file in \(directory): \(String(cString: strerror(errno)))")
        }
        // Held until this object ends: the mark that a writer is alive.
        flock(named, LOCK_EX | LOCK_NB)
        descriptor = named
        temporary = name
    }

    deinit { if !finished { abort() } }

    /// Where to write the new contents; writeback starts every 8 MiB, so
    /// that `commit`'s fsync finds little left to do.
    public var sink: FileDescriptorSink { FileDescriptorSink(fileDescriptor: descriptor, writebackInterval: 8 << 20) }

    /// Makes the new contents the destination's, durably.
    /// With `replace == false`, fails with `.refused` if the destination
    /// exists (and leaves it untouched).
    public func commit(replace: Bool = true) throws {
        precondition(!finished, "AtomicFile committed or aborted twice")
        guard fsync(descriptor) == 0 else { return try fail("cannot flush \(destination)") }
        if let temporary {
            if replace {
                guard rename(temporary, destination) == 0 else { return try fail("cannot rename into \(destination)") }
            } else {
                // link(2) refuses to replace an existing name, atomically.
                guard link(temporary, destination) == 0 else {
                    return try fail("cannot create \(destination)", exists: errno == EEXIST)
                }
                unlink(temporary)
            }
        } else if replace {
            // Name the finished file (it is whole and flushed), then rename it in.
            let name = AtomicFile.temporaryName(for: destination)
            guard linkDescriptor(to: name) else { return try fail("cannot create a file in \(directory)") }
            guard rename(name, destination) == 0 else {
                unlink(name)
                return try fail("cannot rename into \(destination)")
            }
        } else {
            guard linkDescriptor(to: destination) else {
                return try fail("cannot create \(destination)", exists: errno == EEXIST)
            }
        }
        close(descriptor)
        finished = true
        let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    /// Gives the unnamed file a name; never replaces an existing one.
    private func linkDescriptor(to name: String) -> Bool {
        #if os(Linux)
        return linkat(AT_FDCWD, "/proc/self/fd/\(descriptor)", AT_FDCWD, name, AT_SYMLINK_FOLLOW) == 0
        #else
        return false
        #endif
    }

    /// Discards the new contents; the destination is untouched.
    public func abort() {
        if !finished { close(descriptor) }
        finished = true
        if let temporary { unlink(temporary) }
    }

    private func fail(_ what: String, exists: Bool = false) throws {
        let reason = String(cString: strerror(errno))
        abort()
        if exists { throw CofferError(.refused, "\(destination) already exists") }
        throw CofferError(.io, "\(what): \(reason)")
    }

    static func temporaryName(for destination: String) -> String {
        var random = [UInt8](repeating: 0, count: 6)
        random.withUnsafeMutableBytes { randomBytes($0) }
        return Destination.directory(of: destination) + "/" + temporaryPrefix(for: destination) + Hex.encode(random)
    }

    static func temporaryPrefix(for destination: String) -> String {
        "." + Destination.name(of: destination) + ".coffer-"
    }

    /// True for exactly the names this type gives temporaries of `destination`:
    /// the prefix, then 12 lowercase hex digits.
    static func isTemporaryName(_ name: String, of destination: String) -> Bool {
        let prefix = temporaryPrefix(for: destination)
        guard name.hasPrefix(prefix) else { return false }
        let suffix = name.utf8.dropFirst(prefix.utf8.count)
        return suffix.count == 12 && suffix.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Deletes the temporaries of `destination` whose writers are provably
    /// gone: a regular file with exactly this type's name, whose `flock`
    /// can be taken (a live writer holds it from creation to the end) and
    /// that was last written at least two seconds ago (so a writer between
    /// `open` and `flock` is never mistaken for a dead one). Returns how
    /// many went.
    @discardableResult
    public static func sweepStaleTemporaries(of destination: String) -> Int {
        let directory = Destination.directory(of: destination)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return 0 }
        var removed = 0
        let now = time(nil)
        for name in names where isTemporaryName(name, of: destination) {
            let path = directory + "/" + name
            let candidate = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard candidate >= 0 else { continue }
            defer { close(candidate) }
            var info = stat()
            guard fstat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            #if canImport(Darwin)
            let modified = info.st_mtimespec.tv_sec
            #else
            let modified = info.st_mtim.tv_sec
            #endif
            guard now - modified >= 2, flock(candidate, LOCK_EX | LOCK_NB) == 0 else { continue }
            if unlink(path) == 0 { removed += 1 }
        }
        return removed
    }
}

extension AtomicFile {
    /// The lock file of `destination`: `.NAME.lock` beside the file that
    /// is really written (symlinks resolved), so every path that reaches
    /// one file takes one lock.
    public static func lockPath(for destination: String) throws -> String {
        let resolved = try Destination.resolve(destination)
        guard case .file(let path) = resolved else {
            throw CofferError(.invalidArgument, "\(destination) is \(resolved.kindName), not a regular file")
        }
        return Destination.directory(of: path) + "/." + Destination.name(of: path) + ".lock"
    }

    /// Runs `body` holding an exclusive `flock` on the lock file of
    /// `destination` (``lockPath(for:)``). The temporaries that writers
    /// killed mid-write left are swept by the `AtomicFile` that `body`
    /// creates, so under the lock. A read-modify-write inside
    /// `body` (read, change, write an AtomicFile, commit) is then serial
    /// across processes and safe against `kill -9` at any point.
    ///
    /// The lock file is opened with O_NOFOLLOW: a symlink in its place is
    /// `insecurePermissions`.
    public static func withExclusiveLock<T>(on destination: String, _ body: () throws -> T) throws -> T {
        let lockPath = try lockPath(for: destination)
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            if errno == ELOOP { throw CofferError(.insecurePermissions, "the lock file \(lockPath) is a symlink") }
            throw CofferError(.io, "cannot open the lock file \(lockPath): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw CofferError(.io, "cannot lock \(lockPath): \(String(cString: strerror(errno)))")
            }
        }
        return try body()
    }
}
