import Foundation
import Testing

/// Whole transcripts (status, stdout, stderr) compared with files in
/// Tests/CofferCLITests/Transcripts. COFFER_RECORD_TRANSCRIPTS=1 rewrites
/// the files instead, for review in the diff.
enum Transcript {
    static let directory = CLI.packageRoot.appendingPathComponent("Tests/CofferCLITests/Transcripts")

    static func render(_ command: String, _ result: CLI.Result, replacing: [String: String]) -> String {
        var text =
            "$ \(command)\nstatus: \(result.status)\n--- stdout\n\(result.stdoutText)--- stderr\n\(result.stderr)"
        for (from, to) in replacing.sorted(by: { $0.key.count > $1.key.count }) {
            text = text.replacingOccurrences(of: from, with: to)
        }
        return text
    }

    static func check(
        _ name: String, _ command: String, _ result: CLI.Result, replacing: [String: String] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let actual = render(command, result, replacing: replacing)
        let file = directory.appendingPathComponent("\(name).txt")
        if ProcessInfo.processInfo.environment["COFFER_RECORD_TRANSCRIPTS"] == "1" {
            try actual.write(to: file, atomically: true, encoding: .utf8)
            return
        }
        let expected = try String(contentsOf: file, encoding: .utf8)
        #expect(actual == expected, "transcript \(name) differs", sourceLocation: sourceLocation)
    }
}
