#if Server
import Coffer
// struct stat, as Foundation on Linux imports it.
import CoreFoundation
import Foundation

enum ServerFiles {
    /// A file holding a secret: a regular file of this user's, closed to
    /// others, at most 64 KiB.
    ///
    /// The file is opened first and checked on its descriptor (`fstat`), so
    /// nothing can be swapped between the check and the read, and
    /// `/dev/fd/N` (a pipe the shell or a service manager hands over)
    /// works: a pipe is read as it is; a regular file must be this user's
    /// (or root's) and closed to others.
    static func secretFile(_ path: String, what: String) throws -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else {
            throw ServerFileFailure("cannot open \(what) \(path): \(String(cString: strerror(errno)))", .unreadable)
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw ServerFileFailure("cannot examine \(what) \(path)", .unreadable)
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            guard info.st_uid == getuid() || info.st_uid == 0, info.st_mode & 0o077 == 0 else {
                throw ServerFileFailure("\(what) \(path) is open to other users; chmod 600 it", .refused)
            }
        case S_IFIFO:
            // A pipe gives its bytes once; a command that needs them twice
            // (its settings, then the key ring) is given them again.
            if let earlier = pipesRead.withLock({ $0[path] }) { return earlier }
        default: throw ServerFileFailure("\(what) \(path) is neither a regular file nor a pipe", .badData)
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65537)
        while bytes.count <= 65536 {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw ServerFileFailure("cannot read \(what) \(path)", .unreadable) }
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        guard bytes.count <= 65536 else { throw ServerFileFailure("\(what) \(path) is over 64 KiB", .badData) }
        if info.st_mode & S_IFMT == S_IFIFO { pipesRead.withLock { $0[path] = bytes } }
        return bytes
    }

    /// What each pipe given as a secret file held, for this process's life.
    private static let pipesRead = Locked<[String: [UInt8]]>([:])

    /// A passphrase file: its bytes less one trailing newline; never empty.
    /// Checked as every secret file is (``secretFile(_:what:)``: a regular
    /// file of this user's, closed to others; security review 3, G11).
    static func passphrase(_ path: String, what: String = "the passphrase file") throws -> SecretBytes {
        var bytes = try secretFile(path, what: what)
        guard bytes.count <= 4096 else {
            throw ServerFileFailure("\(what) \(path) is over 4 KiB", .badData)
        }
        if bytes.last == 0x0A { bytes.removeLast() }
        if bytes.last == 0x0D { bytes.removeLast() }
        guard !bytes.isEmpty else { throw ServerFileFailure("\(what) \(path) is empty", .badData) }
        return SecretBytes(bytes)
    }
}
#endif
