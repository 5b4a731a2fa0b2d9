import Foundation
import Testing

/// `coffer store watch`: the query's records as a JSON line now, then a
/// line each time another `coffer` process changes them.
@Suite struct StoreWatchCLITests {
    /// Reads lines from a pipe as they come.
    final class Lines: @unchecked Sendable {
        private let lock = NSCondition()
        private var buffer = Data()

        init(_ pipe: Pipe) {
            pipe.fileHandleForReading.readabilityHandler = { [self] handle in
                let chunk = handle.availableData
                lock.lock()
                buffer.append(chunk)
                lock.broadcast()
                lock.unlock()
                if chunk.isEmpty { handle.readabilityHandler = nil }
            }
        }

        /// The next line, or nil after `seconds`.
        func next(within seconds: Double = 30) -> String? {
            let deadline = Date().addingTimeInterval(seconds)
            lock.lock()
            defer { lock.unlock() }
            while true {
                if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[buffer.startIndex..<end], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...end)
                    return line
                }
                if !lock.wait(until: deadline) { return nil }
            }
        }
    }

    @Test func linesComeForAnotherProcesssCommits() throws {
        let directory = try StoreCLITests.setUp()
        let watch = Process()
        watch.executableURL = CLI.binary
        watch.arguments = [
            "store", "watch", "--db", "s.sqlite", "--kek-file", "kek", "--table", "presents", "--where", "to=Sam",
            "--order-by", "id", "--changes", "3",
        ]
        watch.currentDirectoryURL = directory.url
        let output = Pipe()
        watch.standardOutput = output
        FileManager.default.createFile(atPath: directory.url.appendingPathComponent("watch.err").path, contents: nil)
        let errors = try FileHandle(forWritingTo: directory.url.appendingPathComponent("watch.err"))
        watch.standardError = errors
        let lines = Lines(output)
        try watch.run()
        #expect(lines.next() == "[]")
        // Another process's commit that the query does not select prints nothing…
        StoreCLITests.ok(
            try StoreCLITests.store(
                ["put", "--table", "presents"], directory, stdin: Array(#"{"to": "Ann", "description": "x"}"#.utf8)),
            "put Ann")
        // …and one it selects prints the records.
        StoreCLITests.ok(
            try StoreCLITests.store(
                ["put", "--table", "presents"], directory, stdin: Array(#"{"to": "Sam", "description": "a kite"}"#.utf8)
            ),
            "put Sam")
        #expect(lines.next() == #"[{"id":2,"to":"Sam","description":"a kite","email":null}]"#)
        StoreCLITests.ok(
            try StoreCLITests.store(
                ["update", "--table", "presents", "--id", "2"], directory,
                stdin: Array(#"{"description": "a red kite"}"#.utf8)),
            "update")
        #expect(lines.next() == #"[{"id":2,"to":"Sam","description":"a red kite","email":null}]"#)
        watch.waitUntilExit()
        #expect(watch.terminationStatus == 0)
        // The sealed descriptions reach standard output, the results asked
        // for, and nothing else: no line the command logs holds one.
        try errors.close()
        let logged = try String(contentsOf: directory.url.appendingPathComponent("watch.err"), encoding: .utf8)
        #expect(!logged.contains("kite") && !logged.contains("Sam"), "\(logged)")
    }
}
