import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `coffer` binary (and peers) as a user would.
enum CLI {
    struct Result {
        var status: Int32
        var stdout: [UInt8]
        var stderr: String
        var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    }

    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The `coffer` executable built beside the test bundle.
    static let binary: URL = {
        if let path = ProcessInfo.processInfo.environment["COFFER_BIN"] { return URL(fileURLWithPath: path) }
        let beside = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("coffer")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        return packageRoot.appendingPathComponent(".build/debug/coffer")
    }()

    @discardableResult
    static func coffer(
        _ arguments: [String], stdin: [UInt8] = [], in directory: URL? = nil,
        environment: [String: String] = [:]
    ) throws -> Result {
        try run(binary.path, arguments, stdin: stdin, in: directory, environment: environment)
    }

    /// Runs `executable`; stdout and stderr go to files so that no pipe can
    /// fill up and stall either side.
    static func run(
        _ executable: String, _ arguments: [String], stdin: [UInt8] = [], in directory: URL? = nil,
        environment: [String: String] = [:]
    ) throws -> Result {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let inURL = scratch.appendingPathComponent("stdin")
        let outURL = scratch.appendingPathComponent("stdout")
        let errURL = scratch.appendingPathComponent("stderr")
        try Data(stdin).write(to: inURL)
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        var env = ProcessInfo.processInfo.environment
        env["COLUMNS"] = "80"
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardInput = try FileHandle(forReadingFrom: inURL)
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardError = try FileHandle(forWritingTo: errURL)
        try process.run()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: Array(try Data(contentsOf: outURL)),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }
}

/// A directory that disappears with the test.
final class TemporaryDirectory {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Writes a file only its owner can read, as key files must be.
    @discardableResult
    func write(_ name: String, _ bytes: some DataProtocol) throws -> String {
        try Data(bytes).write(to: url.appendingPathComponent(name))
        chmod(path(name), 0o600)
        return path(name)
    }

    func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: url.appendingPathComponent(name))) }
    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path(name)) }
}

/// Deterministic test data.
func pattern(_ count: Int, seed: UInt32 = 7) -> [UInt8] {
    var state = seed &* 2_654_435_761 | 1
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 17
        state ^= state << 5
        return UInt8(truncatingIfNeeded: state)
    }
}
