#if Server
import ArgumentParser
import CofferKeyServerCore
import Foundation
import Logging

extension Serve {
    /// How often the audit chain is anchored, and where checkpoint lines go.
    func auditAnchoring(_ settings: ServerSettings) throws -> (
        interval: Duration, checkpoint: (@Sendable (String) throws -> Void)?, last: AuditAnchor?
    ) {
        let seconds = try auditAnchorEvery ?? settings.value(nil, "audit-anchor-every").map(Self.decimalSeconds) ?? 60
        guard seconds >= 0.1, seconds <= 86_400 else {
            throw ValidationError("--audit-anchor-every is 0.1 to 86,400 seconds")
        }
        let target = settings.value(auditCheckpoint, "audit-checkpoint")
        return (
            .milliseconds(Int64((seconds * 1000).rounded())), target.map(Self.checkpointWriter),
            try target.flatMap(Self.lastCheckpoint)
        )
    }

    /// The last line of the checkpoint file `target`, as an anchor: the
    /// server anchors again only if the database still holds it and the
    /// chain extends it (security review 4, H8). Nil for standard output,
    /// a file not there yet, or one without a line.
    static func lastCheckpoint(_ target: String) throws -> AuditAnchor? {
        guard target != "-", let file = FileHandle(forReadingAtPath: target) else { return nil }
        defer { try? file.close() }
        let end = try file.seekToEnd()
        try file.seek(toOffset: end > 4096 ? end - 4096 : 0)
        let tail = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        guard let line = tail.split(separator: "\n").last else { return nil }
        do {
            return try AuditAnchor(line: String(line))
        } catch {
            throw ValidationError(
                "the last line of the audit checkpoint file \(target) is not a checkpoint line: \(error)")
        }
    }

    /// Appends each checkpoint line to `target` ("-" for standard output),
    /// synced before the next anchor is made.
    static func checkpointWriter(_ target: String) -> @Sendable (String) throws -> Void {
        { line in
            if target == "-" {
                FileHandle.standardOutput.write(Data(line.utf8))
                return
            }
            if !FileManager.default.fileExists(atPath: target) {
                FileManager.default.createFile(atPath: target, contents: nil, attributes: [.posixPermissions: 0o644])
            }
            guard let file = FileHandle(forWritingAtPath: target) else {
                throw ValidationError("cannot write the audit checkpoint file \(target)")
            }
            defer { try? file.close() }
            try file.seekToEnd()
            try file.write(contentsOf: Data(line.utf8))
            try file.synchronize()
        }
    }

    /// Sets the log's format (text, the default, or json) for every logger
    /// made afterwards; once per process.
    func bootstrapLog(_ settings: ServerSettings) throws {
        // Every logger shares one level, which SIGHUP may change (ReloadService).
        switch settings.value(logFormat, "log-format") ?? "text" {
        case "text":
            LoggingSystem.bootstrap { label in
                SharedLevelLogHandler(inner: StreamLogHandler.standardError(label: label))
            }
        case "json": LoggingSystem.bootstrap { label in SharedLevelLogHandler(inner: JSONLogHandler(label: label)) }
        case let other: throw ValidationError("--log-format is text or json, not \(other)")
        }
    }

    func logLevel(_ settings: ServerSettings) throws -> Logger.Level {
        guard let text = settings.value(logLevel, "log-level") else { return .info }
        guard let level = Logger.Level(rawValue: text) else {
            throw ValidationError("--log-level is trace, debug, info, notice, warning, error or critical, not \(text)")
        }
        return level
    }
}
#endif
