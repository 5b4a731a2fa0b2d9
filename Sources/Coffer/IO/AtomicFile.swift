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
/// The bytes go to a new temporary file beside the destination (created
/// with O_EXCL|O_NOFOLLOW, mode 0600 by default), which `commit` flushes
/// with fsync, renames over the destination and makes durable by syncing
/// the directory. Several writers to one destination each produce a whole
/// file; the last to commit wins. A process killed mid-write leaves only a
/// temporary `.NAME.coffer-XXXXXX` file, never a damaged destination.
public final class AtomicFile {
    public let destination: String
    private let temporary: String
    private let descriptor: Int32
    private var finished = false

    /// - Parameter mode: permissions of the new file (0600 unless the
    ///   caller has a reason to share it).
    public init(destination: String, mode: mode_t = 0o600) throws {
        self.destination = destination
        let url = URL(fileURLWithPath: destination)
        let directory = url.deletingLastPathComponent().path
        var random = [UInt8](repeating: 0, count: 6)
        random.withUnsafeMutableBytes { randomBytes($0) }
        temporary = directory + "/." + url.lastPathComponent + ".coffer-" + random.map { String(format: "%02x", $0) }.joined()
        descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw CofferError(.io, "cannot create a file in \(directory): \(String(cString: strerror(errno)))")
        }
    }

    deinit { if !finished { abort() } }

    /// Where to write the new contents.
    public var sink: FileDescriptorSink { FileDescriptorSink(fileDescriptor: descriptor) }

    /// Makes the new contents the destination's, durably.
    /// With `replace == false`, fails with `.io` if the destination exists
    /// (and leaves it untouched).
    public func commit(replace: Bool = true) throws {
        precondition(!finished, "AtomicFile committed or aborted twice")
        guard fsync(descriptor) == 0 else { return try fail("cannot flush \(destination)") }
        close(descriptor)
        finished = true
        if replace {
            guard rename(temporary, destination) == 0 else { return try fail("cannot rename into \(destination)") }
        } else {
            // link(2) refuses to replace an existing name, atomically.
            guard link(temporary, destination) == 0 else { return try fail("cannot create \(destination)") }
            unlink(temporary)
        }
        let directory = open(URL(fileURLWithPath: destination).deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    /// Discards the new contents; the destination is untouched.
    public func abort() {
        if !finished { close(descriptor) }
        finished = true
        unlink(temporary)
    }

    private func fail(_ what: String) throws {
        let reason = String(cString: strerror(errno))
        abort()
        throw CofferError(.io, "\(what): \(reason)")
    }
}

extension AtomicFile {
    /// The lock file beside `destination`: `.NAME.lock`.
    public static func lockPath(for destination: String) -> String {
        let url = URL(fileURLWithPath: destination)
        return url.deletingLastPathComponent().path + "/." + url.lastPathComponent + ".lock"
    }

    /// Runs `body` holding an exclusive `flock` on `.NAME.lock` beside
    /// `destination`, after deleting the temporary files (`.NAME.coffer-*`)
    /// that writers killed mid-write left: every live writer of a
    /// destination updated this way holds the lock, so none is left but
    /// the dead ones'. A read-modify-write inside `body` (read, change,
    /// write an AtomicFile, commit) is then serial across processes and
    /// safe against `kill -9` at any point.
    ///
    /// The lock file is opened with O_NOFOLLOW: a symlink in its place is
    /// `insecurePermissions`.
    public static func withExclusiveLock<T>(on destination: String, _ body: () throws -> T) throws -> T {
        let lockPath = lockPath(for: destination)
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            if errno == ELOOP { throw CofferError(.insecurePermissions, "the lock file \(lockPath) is a symlink") }
            throw CofferError(.io, "cannot open the lock file \(lockPath): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw CofferError(.io, "cannot lock \(lockPath): \(String(cString: strerror(errno)))") }
        }
        let url = URL(fileURLWithPath: destination)
        let directory = url.deletingLastPathComponent().path
        let prefix = "." + url.lastPathComponent + ".coffer-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasPrefix(prefix) {
            unlink(directory + "/" + name)
        }
        return try body()
    }
}
