#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whole files, async: encrypt or decrypt one path into another off the
/// cooperative thread pool. The output is written atomically (a temporary
/// renamed into place) when it is a regular file, and is left untouched on
/// failure.
///
/// ```swift
/// try await Age.encrypt(file: "report.pdf", to: "report.pdf.age", recipients: [recipient])
/// try await Age.decrypt(file: "report.pdf.age", to: "report.pdf", identities: [identity])
/// ```
extension Age {
    public static func encrypt(
        file input: String, to output: String, recipients: [any Recipient], armored: Bool = false
    ) async throws {
        try await BlockingWork.run {
            try withFiles(input, output) { source, sink in
                try encrypt(from: &source, to: &sink, recipients: recipients, armored: armored)
            }
        }
    }

    public static func decrypt(file input: String, to output: String, identities: [any Identity]) async throws {
        try await BlockingWork.run {
            try withFiles(input, output) { source, sink in
                try decrypt(from: &source, to: &sink, identities: identities)
            }
        }
    }

    /// Opens `input`, makes `output`, runs `body`, and keeps the output only
    /// if `body` succeeded.
    static func withFiles(
        _ input: String, _ output: String,
        _ body: (inout FileDescriptorSource, inout FileDescriptorSink) throws -> Void
    ) throws {
        let descriptor = open(input, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CofferError(.io, "cannot open \(input): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let file = try OutputFile(path: output)
        do {
            var source = FileDescriptorSource(fileDescriptor: descriptor)
            var sink = file.sink
            try body(&source, &sink)
            try file.commit()
        } catch {
            file.abort()
            throw error
        }
    }
}
