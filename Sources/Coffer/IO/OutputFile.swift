import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
            guard copy >= 0 else {
                throw CofferError(.io, "cannot write to \(path): file descriptor \(number) is not open")
            }
            file = nil
            streamDescriptor = copy
        case .special(let special, _):
            let opened = open(special, O_WRONLY | O_NOCTTY | O_CLOEXEC)
            guard opened >= 0 else {
                throw CofferError(
                    .io, "cannot open \(special) (\(destination.kindName)): \(String(cString: strerror(errno)))")
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
