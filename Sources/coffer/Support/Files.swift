import Coffer
import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The input of a command: a path, or standard input for nil and "-".
struct Input {
    let source: FileDescriptorSource
    let name: String
    /// Size in bytes when the input is a regular file.
    let size: Int64?
    let descriptor: Int32

    init(path: String?) throws {
        if path == nil || path == "-" {
            descriptor = STDIN_FILENO
            name = "standard input"
        } else {
            descriptor = open(path!, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw CLIFailure("cannot open \(path!): \(String(cString: strerror(errno)))", status: 1)
            }
            name = path!
        }
        var info = stat()
        size = fstat(descriptor, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG ? Int64(info.st_size) : nil
        source = FileDescriptorSource(fileDescriptor: descriptor)
    }

    var isTerminal: Bool { isatty(descriptor) == 1 }

    func finish() { if descriptor != STDIN_FILENO { close(descriptor) } }

    /// - Parameter secret: the file holds a key (an identity, a KEK, a
    ///   private key): a regular file must be yours and closed to others,
    ///   as OpenSSH requires of private keys.
    static func readAll(path: String, what: String, secret: Bool = false) throws -> [UInt8] {
        let input = try Input(path: path)
        defer { input.finish() }
        if secret && input.descriptor != STDIN_FILENO {
            try PrivateFile.check(descriptor: input.descriptor, path: path, what: what)
        }
        var source = input.source
        var sink = BufferSink()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
            if count == 0 { break }
            try buffer.withUnsafeBytes { try sink.write(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            guard sink.bytes.count <= 16 << 20 else { throw CLIFailure("\(what) \(path) is larger than 16 MiB") }
        }
        return sink.bytes
    }

    /// A file holding exactly 32 key bytes (a keychain key file, a KEK):
    /// any other length is a usage error naming what was read.
    static func readKey32(path: String, what: String) throws -> SymmetricKey {
        let bytes = try readAll(path: path, what: what, secret: true)
        guard bytes.count == 32 else {
            throw CLIFailure("\(what) \(path) holds \(bytes.count) bytes; it must hold 32", status: 64)
        }
        return SymmetricKey(data: bytes)
    }
}

/// The output of a command: a file written atomically (kept only when the
/// command succeeds), a device, FIFO or descriptor written directly
/// (`-o /dev/null`, `-o /dev/fd/3`, a named pipe), or standard output.
final class Output {
    private let file: OutputFile?
    let sink: FileDescriptorSink

    /// - Parameter binary: refuse to write to a terminal.
    init(path: String?, binary: Bool, hint: String = "use -o FILE to write to a file") throws {
        if let path, path != "-" {
            file = try OutputFile(path: path)
            if binary, case .descriptor = file!.destination, isatty(file!.sink.fileDescriptor) == 1 {
                throw CLIFailure(
                    "refusing to output binary to the terminal", hint: hint, status: CLIFailure.refusedStatus)
            }
            sink = file!.sink
        } else {
            if binary && isatty(STDOUT_FILENO) == 1 {
                throw CLIFailure(
                    "refusing to output binary to the terminal", hint: hint, status: CLIFailure.refusedStatus)
            }
            file = nil
            sink = FileDescriptorSink(fileDescriptor: STDOUT_FILENO)
        }
    }

    static var isTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Runs `body` with the sink; keeps the file only if `body` succeeds.
    /// With `replace == false` an existing file is left alone and the
    /// command is refused (secret keys: the README's rule for -o).
    func write(replace: Bool = true, _ body: (inout FileDescriptorSink) throws -> Void) throws {
        var sink = self.sink
        do {
            try body(&sink)
            try file?.commit(replace: replace)
        } catch let error as CofferError where error.code == .refused {
            file?.abort()
            throw CLIFailure(
                "\(error); refusing to replace a file with a private key",
                hint: "choose another name, or delete the old file if you are sure nothing needs it",
                status: CLIFailure.refusedStatus)
        } catch {
            file?.abort()
            throw error
        }
    }
}

/// The CLI's one resolver from "which secret" options to an `UnlockSecret`:
/// a 32-byte key file, else a passphrase file, else a prompt on the
/// terminal (never argv). Keychains, key rings and their `passwd` commands
/// all come through here.
enum SecretSource {
    static func unlock(keyFile: String?, passphraseFile: String?, keyWhat: String, prompt: String, confirm: Bool)
        throws -> UnlockSecret
    {
        if let keyFile { return try kek(path: keyFile, what: keyWhat) }
        if let passphraseFile { return .password(try Passphrase.read(file: passphraseFile)) }
        return .password(try Passphrase.prompt(prompt, confirm: confirm))
    }

    /// A KEK file: 32 bytes, or the text of a recovery key (``RecoveryKey``,
    /// as `coffer store add-slot --recovery-key` printed it).
    static func kek(path: String, what: String) throws -> UnlockSecret {
        let bytes = try Input.readAll(path: path, what: what, secret: true)
        if bytes.count == 32 { return .key(SymmetricKey(data: bytes)) }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if bytes.count > 32, text.utf8.allSatisfy({ $0 < 0x80 }) {
            do { return try .recoveryKey(text) } catch let error as CofferError {
                throw CLIFailure("\(what) \(path) is not a recovery key: \(error.description)", status: 64)
            }
        }
        throw CLIFailure(
            "\(what) \(path) holds \(bytes.count) bytes; it must hold 32 (or a recovery key's text)", status: 64)
    }
}
