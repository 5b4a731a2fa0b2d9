import ArgumentParser
import CofferKeyServer
import Foundation
import Logging

/// The server's audit anchors (docs/key-server.md, "Audit log"): every
/// `interval` the chain's head, when it moved, is anchored in the
/// database, and the anchor's checkpoint line is appended to a file or
/// standard output kept outside the database.
struct AuditAnchoring: Sendable {
    let interval: Duration
    /// A file's path, "-" for standard output, nil for none.
    let checkpoint: String?

    func run(_ store: ServerKeyStore, logger: Logger) async throws {
        while !Task.isCancelled {
            try await Task.sleep(for: interval)
            await anchor(store, logger: logger)
        }
    }

    /// Anchors the head when it moved since the last anchor; a failure is
    /// logged and tried again at the next interval.
    func anchor(_ store: ServerKeyStore, logger: Logger) async {
        do {
            guard let anchor = try await store.anchorAudit() else { return }
            try write(anchor.line + "\n")
        } catch {
            logger.warning("audit anchor not written", metadata: ["error": "\(error)"])
        }
    }

    private func write(_ line: String) throws {
        guard let checkpoint else { return }
        if checkpoint == "-" {
            FileHandle.standardOutput.write(Data(line.utf8))
            return
        }
        if !FileManager.default.fileExists(atPath: checkpoint) {
            FileManager.default.createFile(atPath: checkpoint, contents: nil, attributes: [.posixPermissions: 0o644])
        }
        guard let file = FileHandle(forWritingAtPath: checkpoint) else {
            throw ValidationError("cannot write the audit checkpoint file \(checkpoint)")
        }
        defer { try? file.close() }
        try file.seekToEnd()
        try file.write(contentsOf: Data(line.utf8))
        try file.synchronize()
    }
}

extension Serve {
    func auditAnchoring(_ settings: ServerSettings) throws -> AuditAnchoring {
        let seconds = try auditAnchorEvery ?? settings.value(nil, "audit-anchor-every").map(Self.decimalSeconds) ?? 60
        guard seconds >= 0.1, seconds <= 86_400 else {
            throw ValidationError("--audit-anchor-every is 0.1 to 86,400 seconds")
        }
        return AuditAnchoring(
            interval: .milliseconds(Int64((seconds * 1000).rounded())),
            checkpoint: settings.value(auditCheckpoint, "audit-checkpoint"))
    }
}
