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

    /// - Parameter mode: permissions of the new file (0600 unless the
    ///   caller has a reason to share it).
    public init(destination requested: String, mode: mode_t = 0o600) throws {
        let resolved = try Destination.resolve(requested)
        guard case .file(let path) = resolved else {
            throw CofferError(.invalidArgument, "\(requested) is \(resolved.kindName), not a regular file; it cannot be replaced by a file")
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

    /// Where to write the new contents.
    public var sink: FileDescriptorSink { FileDescriptorSink(fileDescriptor: descriptor) }

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
                guard link(temporary, destination) == 0 else { return try fail("cannot create \(destination)", exists: errno == EEXIST) }
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
            guard linkDescriptor(to: destination) else { return try fail("cannot create \(destination)", exists: errno == EEXIST) }
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
    /// `destination` (``lockPath(for:)``), after sweeping the temporaries
    /// that writers killed mid-write left. A read-modify-write inside
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
            guard errno == EINTR else { throw CofferError(.io, "cannot lock \(lockPath): \(String(cString: strerror(errno)))") }
        }
        sweepStaleTemporaries(of: try Destination.resolve(destination).path)
        return try body()
    }
}

/// What a path names when Coffer is about to write it, found with `lstat`
/// before anything is created.
public enum Destination: Equatable, Sendable {
    /// A regular file, or a name not yet taken: written through an
    /// ``AtomicFile`` at this path (symlinks resolved, the folder's too).
    case file(String)
    /// An open descriptor of this process (`/dev/stdout`, `/dev/stderr`,
    /// `/dev/fd/N`, `/proc/self/fd/N`): written through a duplicate, so
    /// its offset and append mode are kept.
    case descriptor(Int32)
    /// A character or block device, a FIFO or a socket: opened without
    /// O_TRUNC and written directly, never replaced.
    case special(String, kind: String)

    public var path: String {
        switch self {
        case .file(let path), .special(let path, _): path
        case .descriptor(let number): "/dev/fd/\(number)"
        }
    }

    var kindName: String {
        switch self {
        case .file: "a file"
        case .descriptor(let number): "file descriptor \(number)"
        case .special(_, let kind): kind
        }
    }

    /// Follows symlinks (at most 40, as the kernel does) and classifies
    /// the final target. A dangling link resolves to its target's path,
    /// which is then created, as a shell's `>` would.
    public static func resolve(_ requested: String) throws -> Destination {
        guard !requested.isEmpty else { throw CofferError(.invalidArgument, "an empty path") }
        if let number = descriptorNumber(requested) { return .descriptor(number) }
        var path = requested
        for _ in 0..<40 {
            var info = stat()
            guard lstat(path, &info) == 0 else {
                guard errno == ENOENT else {
                    throw CofferError(.io, "cannot examine \(path): \(String(cString: strerror(errno)))")
                }
                return .file(try canonicalParent(of: path))
            }
            switch info.st_mode & S_IFMT {
            case S_IFREG: return .file(try canonicalParent(of: path))
            case S_IFDIR: throw CofferError(.invalidArgument, "\(requested) is a folder")
            case S_IFCHR: return .special(path, kind: "a character device")
            case S_IFBLK: return .special(path, kind: "a block device")
            case S_IFIFO: return .special(path, kind: "a named pipe")
            case S_IFSOCK: return .special(path, kind: "a socket")
            case S_IFLNK:
                var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let count = readlink(path, &target, Int(PATH_MAX))
                guard count > 0 else { throw CofferError(.io, "cannot read the link \(path): \(String(cString: strerror(errno)))") }
                let text = String(decoding: target[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if let number = descriptorNumber(text) { return .descriptor(number) }
                path = text.hasPrefix("/") ? text : directory(of: path) + "/" + text
            default:
                throw CofferError(.invalidArgument, "\(requested) is not a file Coffer can write")
            }
        }
        throw CofferError(.invalidArgument, "\(requested): too many levels of symbolic links")
    }

    /// `/dev/stdout` → 1, `/dev/fd/3` → 3, …; nil for any other path.
    static func descriptorNumber(_ path: String) -> Int32? {
        switch path {
        case "/dev/stdin": return 0
        case "/dev/stdout": return 1
        case "/dev/stderr": return 2
        default:
            for prefix in ["/dev/fd/", "/proc/self/fd/"] where path.hasPrefix(prefix) {
                return Int32(path.dropFirst(prefix.count))
            }
            return nil
        }
    }

    /// The path with its folder made canonical (realpath), the name kept.
    static func canonicalParent(of path: String) throws -> String {
        let folder = directory(of: path)
        guard let real = realpath(folder, nil) else {
            throw CofferError(.io, "cannot reach the folder \(folder): \(String(cString: strerror(errno)))")
        }
        defer { free(real) }
        let canonical = String(cString: real)
        return (canonical == "/" ? "" : canonical) + "/" + Destination.name(of: path)
    }

    /// The folder part of `path` ("." for a bare name). Written by hand:
    /// Foundation's NSString path methods trap on some one-character paths.
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The last component of `path`.
    static func name(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

/// The output of a command or job: a regular file replaced atomically
/// (kept only on `commit`), or, when the destination is a device, a FIFO,
/// a socket or an open descriptor, a stream written directly (no
/// temporary, no rename, no O_TRUNC), since such a destination cannot be
/// replaced and must stay what it is.
public final class OutputFile {
    private let file: AtomicFile?
    private let streamDescriptor: Int32?
    /// What the bytes go to.
    public let destination: Destination

    public init(path: String, mode: mode_t = 0o600) throws {
        destination = try Destination.resolve(path)
        switch destination {
        case .file:
            file = try AtomicFile(destination: path, mode: mode)
            streamDescriptor = nil
        case .descriptor(let number):
            let copy = fcntl(number, F_DUPFD_CLOEXEC, 3)
            guard copy >= 0 else { throw CofferError(.io, "cannot write to \(path): file descriptor \(number) is not open") }
            file = nil
            streamDescriptor = copy
        case .special(let special, _):
            let opened = open(special, O_WRONLY | O_NOCTTY | O_CLOEXEC)
            guard opened >= 0 else {
                throw CofferError(.io, "cannot open \(special) (\(destination.kindName)): \(String(cString: strerror(errno)))")
            }
            file = nil
            streamDescriptor = opened
        }
    }

    deinit { if let streamDescriptor { close(streamDescriptor) } }

    /// True when the output is replaced atomically (a regular file).
    public var isAtomic: Bool { file != nil }

    public var sink: FileDescriptorSink { file?.sink ?? FileDescriptorSink(fileDescriptor: streamDescriptor!) }

    /// Keeps what was written: renames a file into place; a stream has
    /// already received its bytes.
    public func commit(replace: Bool = true) throws { try file?.commit(replace: replace) }

    /// Discards a file's new contents. A stream cannot take back what it
    /// received; callers release only authenticated bytes into it.
    public func abort() { file?.abort() }
}
