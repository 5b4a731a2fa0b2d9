import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps, for each key ring or keychain, the highest generation this user
/// has written, somewhere the file's own writer cannot roll back, so that
/// an older copy put back in the file's place is refused (`rolledBack`)
/// instead of silently re-enabling a disabled key or dropping a rotation.
///
/// Marks are read before the file and raised only after a write that
/// committed, so a reader racing a writer never sees a false alarm.
public protocol RollbackGuard: Sendable {
    /// The highest generation recorded under `key`, or nil.
    func highWaterMark(for key: String) throws -> UInt64?
    /// Raises the mark under `key` to `generation`; never lowers it.
    func raise(_ key: String, to generation: UInt64) throws
    /// Sets the mark under `key` to exactly `generation` (a file created
    /// anew, or an older copy accepted on purpose).
    func reset(_ key: String, to generation: UInt64) throws
}

extension RollbackGuard {
    /// Throws `rolledBack` when `generation` is below the mark under `key`.
    public func check(_ key: String, generation: UInt64, what: String) throws {
        guard let mark = try highWaterMark(for: key), generation < mark else { return }
        throw CofferError(
            .rolledBack,
            "\(what) is generation \(generation), but generation \(mark) was already written: an older copy was put back in its place"
        )
    }
}

/// The marks in one small text file per user, `KEY GENERATION` per line:
/// `$COFFER_STATE_DIR/generations`, else `$XDG_STATE_HOME/coffer/generations`,
/// else `~/.local/state/coffer/generations`. Updates are read-modify-writes
/// under the file's lock, replaced atomically; the file and its folder must
/// belong to this user and be closed to others. Marks of keychains whose
/// file no longer exists are dropped when the file is rewritten.
public final class StateFileRollbackGuard: RollbackGuard {
    public let path: String

    public init(path: String) { self.path = path }

    /// The per-user state file.
    public static var user: StateFileRollbackGuard { StateFileRollbackGuard(path: defaultPath) }

    public static var defaultPath: String {
        let environment = ProcessInfo.processInfo.environment
        if let directory = environment["COFFER_STATE_DIR"], !directory.isEmpty { return directory + "/generations" }
        let state =
            environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? (NSHomeDirectory() + "/.local/state")
        return state + "/coffer/generations"
    }

    public func highWaterMark(for key: String) throws -> UInt64? { try load()[key] }

    public func raise(_ key: String, to generation: UInt64) throws {
        try update { marks in
            guard (marks[key] ?? 0) < generation else { return false }
            marks[key] = generation
            return true
        }
    }

    public func reset(_ key: String, to generation: UInt64) throws {
        try update { marks in
            marks[key] = generation
            return true
        }
    }

    private func update(_ change: (inout [String: UInt64]) -> Bool) throws {
        let folder = Destination.directory(of: path)
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try AtomicFile.withExclusiveLock(on: path) {
            var marks = try load()
            guard change(&marks) else { return }
            // Forget keychains that are gone: their paths can be reused by new ones.
            for key in marks.keys where key.hasPrefix("keychain:") && access(String(key.dropFirst(9)), F_OK) != 0 {
                marks[key] = nil
            }
            let text = marks.sorted { $0.key < $1.key }.map {
                "\($0.key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(.whitespaces)) ?? $0.key) \($0.value)\n"
            }.joined()
            let file = try AtomicFile(destination: path, mode: 0o600)
            var sink = file.sink
            do {
                try sink.write(Array(text.utf8))
                try file.commit()
            } catch {
                file.abort()
                throw error
            }
        }
    }

    private func load() throws -> [String: UInt64] {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return [:] }
            throw CofferError(.io, "cannot read the rollback marks in \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        try PrivateFile.check(descriptor: descriptor, path: path, what: "the rollback marks file", allowGroupRead: true)
        let bytes = try PrivateFile.readAll(
            descriptor: descriptor, limit: 1 << 20, path: path, what: "the rollback marks file")
        var marks: [String: UInt64] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let generation = UInt64(parts[1]) else {
                throw CofferError(
                    .malformed, "the rollback marks file \(path) is damaged (line \"\(line.prefix(80))\")")
            }
            marks[String(parts[0]).removingPercentEncoding ?? String(parts[0])] = generation
        }
        return marks
    }
}

extension PrivateFile {
    /// The whole of an open file, at most `limit` bytes (`malformed` past
    /// it). The buffer is sized from `fstat`, not from the limit: these
    /// small files are read on every keychain and key ring operation.
    package static func readAll(descriptor: Int32, limit: Int, path: String, what: String) throws -> [UInt8] {
        var info = stat()
        let expected = fstat(descriptor, &info) == 0 && info.st_mode & S_IFMT == S_IFREG ? Int(info.st_size) : limit
        var bytes = [UInt8](repeating: 0, count: min(expected, limit) + 1)
        var source = FileDescriptorSource(fileDescriptor: descriptor)
        var count = try bytes.withUnsafeMutableBytes { try source.readFully(into: $0) }
        // The file grew since fstat: read on, up to the limit.
        while count == bytes.count && count <= limit {
            bytes += [UInt8](repeating: 0, count: min(bytes.count, limit + 1 - count))
            let more = try bytes.withUnsafeMutableBytes {
                try source.readFully(into: UnsafeMutableRawBufferPointer(rebasing: $0[count...]))
            }
            if more == 0 { break }
            count += more
        }
        guard count <= limit else { throw CofferError(.malformed, "\(what) \(path) is larger than \(limit >> 20) MiB") }
        return Array(bytes[..<count])
    }
}

/// Checks that a file Coffer is about to trust with secrets is a regular
/// file owned by this user (or root) and closed to others, as OpenSSH
/// checks private keys.
public enum PrivateFile {
    /// - Parameters:
    ///   - descriptor: the open file to check (checked, not its path, so
    ///     that it cannot be swapped between check and use).
    ///   - path: the file's name, for the error message.
    ///   - what: what the file is ("the identity file"), for the message.
    ///   - allowGroupRead: accept group and other read bits (for files
    ///     whose integrity, not secrecy, matters); writes by others are
    ///     always refused.
    public static func check(descriptor: Int32, path: String, what: String, allowGroupRead: Bool = false) throws {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw CofferError(.io, "cannot examine \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { return }  // a pipe or /dev/fd: nothing to check
        try check(info, path: path, what: what, allowGroupRead: allowGroupRead)
    }

    private static func check(_ info: stat, path: String, what: String, allowGroupRead: Bool) throws {
        guard info.st_uid == geteuid() || info.st_uid == 0 else {
            throw CofferError(
                .insecurePermissions, "\(what) \(path) belongs to another user (uid \(info.st_uid)); it must be yours")
        }
        let forbidden: mode_t = allowGroupRead ? 0o022 : 0o077
        guard info.st_mode & forbidden == 0 else {
            throw CofferError(
                .insecurePermissions,
                "\(what) \(path) is open to other users (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
    }

    /// The same check by path, following symbolic links, without opening
    /// the file: for a file this process may already hold open with POSIX
    /// locks (an SQLite database), since closing any descriptor of a file
    /// drops every such lock the process holds on it. False when there is
    /// no file at `path`.
    public static func check(path: String, what: String) throws -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return false }
            throw CofferError(.io, "cannot examine \(path): \(String(cString: strerror(errno)))")
        }
        try check(info, path: path, what: what, allowGroupRead: false)
        return true
    }
}
