#if Server
import Coffer
import CofferStore
import Foundation
import Logging

/// `--log-format json`: each log line one JSON object on standard error —
/// `time` (UTC, milliseconds), `level`, `label`, `message`, then each
/// metadata key as a member of its own (`request.id`, `http.route`, …) —
/// for a collector that reads JSON lines. Written with one `write` per
/// line, so that lines from several threads never interleave.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var members: [(String, String)] = [
            ("time", Self.quoted(Self.time(Date()))), ("level", Self.quoted(event.level.rawValue)),
            ("label", Self.quoted(label)), ("message", Self.quoted("\(event.message)")),
        ]
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        for (key, value) in merged.sorted(by: { $0.key < $1.key })
        where !["time", "level", "label", "message"].contains(key) {
            members.append((key, Self.json(value)))
        }
        let line = "{" + members.map { Self.quoted($0.0) + ":" + $0.1 }.joined(separator: ",") + "}\n"
        Self.lock.withLock { _ in
            line.utf8CString.withUnsafeBufferPointer { buffer in
                var offset = 0
                let count = buffer.count - 1
                while offset < count {
                    let written = write(STDERR_FILENO, buffer.baseAddress! + offset, count - offset)
                    if written <= 0 { break }
                    offset += written
                }
            }
        }
    }

    private static let lock = Locked(())

    static func json(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): quoted(text)
        case .stringConvertible(let value): quoted(value.description)
        case .array(let values): "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let members):
            "{"
                + members.sorted { $0.key < $1.key }.map { quoted($0.key) + ":" + json($0.value) }.joined(
                    separator: ",")
                + "}"
        }
    }

    /// `text` as a JSON string (the record store's quoting).
    static func quoted(_ text: String) -> String { RecordJSON.quoted(text) }

    static func time(_ date: Date) -> String {
        date.formatted(
            Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: TimeZone(identifier: "UTC")!))
    }
}
#endif
