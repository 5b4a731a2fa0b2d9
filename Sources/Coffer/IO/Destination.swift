import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
                guard count > 0 else {
                    throw CofferError(.io, "cannot read the link \(path): \(String(cString: strerror(errno)))")
                }
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
