#if Server
import Coffer
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A program the tests run to its end beside the server (python, psql,
/// openssl, coffer), with its exit status and what it wrote.
///
/// Not Foundation's `Process`: its `waitUntilExit` returns only once
/// Foundation has noticed the child's end, and while the tests' servers
/// kept the cooperative pool busy it did not always notice
/// (`TestPostgres.control` was the first to move off it). A CI run of the
/// key server's suites under ThreadSanitizer stopped, for good, at the
/// start of a test whose first step runs python through it; its output
/// does not say where, so this removes one candidate. The child here is
/// started by `posix_spawn` with its three standard descriptors and no
/// other (without that, a child of the test process held 17 of its
/// descriptors, so a server it started could hold a test's pipe open),
/// and waited for by `waitpid`.
struct Spawned {
    /// What becomes of the child's standard output or error.
    enum Stream { case capture, discard, inherit }

    /// The exit status, or 128 plus the signal that ended it.
    let status: Int32
    let output: Data
    let errors: Data

    var text: String { String(decoding: output, as: UTF8.self) }
    var errorText: String { String(decoding: errors, as: UTF8.self) }

    /// Runs `executable` (a path) with `arguments`, this process's
    /// environment with `environment` over it, and `input` as its standard
    /// input (nil: /dev/null); `mergeErrors` sends its errors into `output`.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], input: Data? = nil,
        output: Stream = .capture, errors: Stream = .inherit, mergeErrors: Bool = false
    ) throws -> Spawned {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var parentEnds: [Int32] = []
        var childEnds: [Int32] = []
        defer { for fd in parentEnds + childEnds { close(fd) } }
        /// A pipe whose child end becomes `target` in the child; the parent's end.
        func pipeFor(_ target: Int32, childReads: Bool) throws -> Int32 {
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else { throw CofferError(.io, "pipe failed: errno \(errno)") }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            let (parent, child) = childReads ? (fds[1], fds[0]) : (fds[0], fds[1])
            parentEnds.append(parent)
            childEnds.append(child)
            posix_spawn_file_actions_adddup2(&actions, child, target)
            return parent
        }
        let inputEnd = try input.map { _ in try pipeFor(0, childReads: true) }
        if input == nil { posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) }
        var outputEnd: Int32?
        switch output {
        case .capture: outputEnd = try pipeFor(1, childReads: false)
        case .discard: posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        case .inherit: break
        }
        var errorsEnd: Int32?
        if mergeErrors {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            switch errors {
            case .capture: errorsEnd = try pipeFor(2, childReads: false)
            case .discard: posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            case .inherit: break
            }
        }
        // Every other descriptor of this process stays out of the child.
        _ = closeFrom?(&actions, 3)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let envp: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        // SIGPIPE as a program expects it, whatever this process does with it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw CofferError(.io, "could not start \(executable): errno \(spawned)") }
        for fd in childEnds { close(fd) }
        childEnds = []
        var writer: DispatchSemaphore?
        if let inputEnd, let input {
            // Written beside the reading below, so that a child that answers
            // before it has read everything never blocks either side; a
            // child that stops reading early gives EPIPE, not SIGPIPE.
            _ = ignoreBrokenPipes
            parentEnds.removeAll { $0 == inputEnd }
            let done = DispatchSemaphore(value: 0)
            writer = done
            Thread.detachNewThread {
                input.withUnsafeBytes { bytes in
                    var offset = 0
                    while offset < bytes.count {
                        let written = write(inputEnd, bytes.baseAddress! + offset, bytes.count - offset)
                        if written < 0 && errno == EINTR { continue }
                        if written <= 0 { break }
                        offset += written
                    }
                }
                close(inputEnd)
                done.signal()
            }
        }
        let (out, err) = readToEnd(outputEnd, errorsEnd)
        let status = wait(pid)
        writer?.wait()
        return Spawned(status: status, output: out, errors: err)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later),
    /// which Swift's Glibc module does not declare.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np").map {
            unsafeBitCast(
                $0, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }

    private static let ignoreBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// Everything written to either descriptor until both are closed.
    private static func readToEnd(_ first: Int32?, _ second: Int32?) -> (Data, Data) {
        var results = [Data(), Data()]
        var open = [first, second].enumerated().compactMap { index, fd in fd.map { (index, $0) } }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !open.isEmpty {
            var polled = open.map { pollfd(fd: $0.1, events: Int16(POLLIN), revents: 0) }
            if poll(&polled, nfds_t(polled.count), -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            var closed: [Int] = []
            for (slot, entry) in polled.enumerated() where entry.revents != 0 {
                let count = read(entry.fd, &buffer, buffer.count)
                if count > 0 {
                    results[open[slot].0].append(contentsOf: buffer[0..<count])
                } else if count == 0 || errno != EINTR {
                    closed.append(slot)
                }
            }
            for slot in closed.reversed() { open.remove(at: slot) }
        }
        return (results[0], results[1])
    }

    private static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}
#endif
