#if canImport(Glibc)
import Coffer
import Crypto
import Foundation
import Glibc

/// Encrypts and decrypts one large file with `coffer` and with `age` in the
/// same run, and prints both throughputs, their ratio and coffer's peak
/// RSS. Not a test: a measurement to read.
///
///     swift build -c release && .build/release/coffer-bench [--size-mib 1024] [--dir DIR] [--runs 3]
///
/// The input is read from DIR (default /dev/shm when it exists, so that
/// the disk does not dominate) and both tools write to standard output
/// redirected to /dev/null, so the figures are the tools' own, not the file
/// system's page allocation. Each figure is the best of --runs.
@main
struct Benchmark {
    static func main() throws {
        if CommandLine.arguments.dropFirst().first == "keychain" {
            if CommandLine.arguments.contains("--secret-service") {
                #if SecretService
                try KeychainBenchmark.runSecretService()
                return
                #else
                print("coffer-bench: built without the SecretService trait (swift build -c release --traits SecretService)")
                exit(64)
                #endif
            }
            var directory = NSTemporaryDirectory()
            if let index = CommandLine.arguments.firstIndex(of: "--dir"), index + 1 < CommandLine.arguments.count {
                directory = CommandLine.arguments[index + 1]
            }
            try KeychainBenchmark.run(directory: directory)
            return
        }
        if let mode = CommandLine.arguments.dropFirst().first, mode == "keys" || mode == "sealed" {
            var seconds = 2.0
            if let index = CommandLine.arguments.firstIndex(of: "--seconds"), index + 1 < CommandLine.arguments.count {
                seconds = Double(CommandLine.arguments[index + 1]) ?? seconds
            }
            try mode == "keys" ? KeyBenchmark.run(seconds: seconds) : SealedBenchmark.run(seconds: seconds)
            return
        }
        var sizeMiB = 1024, runs = 3
        var directory = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        var arguments = CommandLine.arguments.dropFirst().makeIterator()
        while let argument = arguments.next() {
            switch argument {
            case "--size-mib": sizeMiB = Int(arguments.next() ?? "") ?? sizeMiB
            case "--dir": directory = arguments.next() ?? directory
            case "--runs": runs = Int(arguments.next() ?? "") ?? runs
            default:
                print("usage: coffer-bench [--size-mib N] [--dir DIR] [--runs N] | coffer-bench keys|sealed [--seconds N] | coffer-bench keychain [--dir DIR | --secret-service]")
                exit(64)
            }
        }
        let coffer = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("coffer").path
        guard FileManager.default.isExecutableFile(atPath: coffer) else { fail("build coffer first: swift build -c release") }
        guard let age = which("age") else { fail("the age CLI is not on PATH (apt-get install age)") }

        let work = "\(directory)/coffer-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let identity = X25519.Identity()
        let key = "\(work)/key.txt"
        try "\(identity.exportSecretKey())\n".write(toFile: key, atomically: true, encoding: .utf8)
        let recipient = identity.recipient.description
        let plain = "\(work)/plain"
        try writeRandomFile(plain, bytes: sizeMiB << 20)

        print("coffer-bench: \(sizeMiB) MiB, \(ProcessInfo.processInfo.activeProcessorCount) cores, files in \(directory), best of \(runs)")
        let bytes = Double(sizeMiB << 20)
        var cofferRSS = 0
        func best(_ command: [String]) -> (seconds: Double, rss: Int) {
            var result = (seconds: Double.infinity, rss: 0)
            for _ in 0..<runs {
                let run = spawn(command)
                result = (min(result.seconds, run.seconds), max(result.rss, run.rss))
            }
            return result
        }
        // Correctness first: each tool opens the other's file.
        _ = spawn([coffer, "encrypt", "-r", recipient, "-o", "\(work)/c.age", plain])
        _ = spawn([age, "-r", recipient, "-o", "\(work)/a.age", plain])
        _ = spawn([coffer, "decrypt", "-i", key, "-o", "\(work)/c.out", "\(work)/a.age"])
        _ = spawn([age, "-d", "-i", key, "-o", "\(work)/a.out", "\(work)/c.age"])
        guard filesEqual(plain, "\(work)/c.out"), filesEqual(plain, "\(work)/a.out") else {
            fail("a decryption did not give back the input")
        }
        try? FileManager.default.removeItem(atPath: "\(work)/c.out")
        try? FileManager.default.removeItem(atPath: "\(work)/a.out")

        let cofferEncrypt = best([coffer, "encrypt", "-r", recipient, plain])
        let ageEncrypt = best([age, "-r", recipient, plain])
        let cofferDecrypt = best([coffer, "decrypt", "-i", key, "\(work)/a.age"])
        let ageDecrypt = best([age, "-d", "-i", key, "\(work)/c.age"])
        cofferRSS = max(cofferEncrypt.rss, cofferDecrypt.rss)

        func rate(_ seconds: Double) -> String { String(format: "%7.0f MiB/s", bytes / seconds / 1_048_576) }
        print("encrypt  coffer \(rate(cofferEncrypt.seconds))   age \(rate(ageEncrypt.seconds))   ratio \(String(format: "%.2f", ageEncrypt.seconds / cofferEncrypt.seconds))×")
        print("decrypt  coffer \(rate(cofferDecrypt.seconds))   age \(rate(ageDecrypt.seconds))   ratio \(String(format: "%.2f", ageDecrypt.seconds / cofferDecrypt.seconds))×")
        let anchor = cipherAnchor(bytes: min(sizeMiB, 512) << 20)
        print(String(format: "anchor   swift-crypto ChaChaPoly.seal, 64 KiB chunks, one core, in memory: %.0f MiB/s (age encrypt is %.2f× of it)",
                     anchor, bytes / ageEncrypt.seconds / 1_048_576 / anchor))
        print("coffer peak RSS: \(cofferRSS / 1024) MiB (encrypt \(cofferEncrypt.rss / 1024) MiB, decrypt \(cofferDecrypt.rss / 1024) MiB)")
    }

    /// The cipher alone: what one core can seal per second through
    /// swift-crypto, with no I/O. coffer's ceiling is this times the cores.
    static func cipherAnchor(bytes: Int) -> Double {
        let key = SymmetricKey(size: .bits256)
        let chunk = [UInt8](repeating: 0x5A, count: 64 * 1024)
        var best = Double.infinity
        for _ in 0..<3 {
            let start = DispatchTime.now()
            var sink = 0
            for _ in 0..<(bytes / chunk.count) {
                sink &+= (try? ChaChaPoly.seal(chunk, using: key).combined.count) ?? 0
            }
            precondition(sink > 0)
            best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
        }
        return Double(bytes) / best / 1_048_576
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("coffer-bench: \(message)\n".utf8))
        exit(1)
    }

    static func which(_ name: String) -> String? {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs a command to completion; returns wall time and its peak RSS (KiB).
    static func spawn(_ command: [String]) -> (seconds: Double, rss: Int) {
        var pid: pid_t = 0
        let argv = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let start = DispatchTime.now()
        // Standard output goes to /dev/null (commands with -o write no stdout).
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        guard posix_spawn(&pid, command[0], &actions, nil, argv, environ) == 0 else { fail("cannot run \(command[0])") }
        var status: Int32 = 0
        var usage = rusage()
        wait4(pid, &status, 0, &usage)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        guard status == 0 else { fail("\(command.joined(separator: " ")) failed with status \(status)") }
        return (seconds, usage.ru_maxrss)
    }

    static func writeRandomFile(_ path: String, bytes: Int) throws {
        FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var block = [UInt8](repeating: 0, count: 1 << 20)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<(bytes >> 20) {
            block.withUnsafeMutableBytes { raw in
                for index in 0..<(raw.count / 8) {
                    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    raw.storeBytes(of: state, toByteOffset: index * 8, as: UInt64.self)
                }
            }
            try handle.write(contentsOf: block)
        }
    }

    /// Compares in 1 MiB blocks, so the benchmark itself stays small (a
    /// spawned child's peak RSS can include its parent's at spawn time).
    static func filesEqual(_ a: String, _ b: String) -> Bool {
        guard let x = FileHandle(forReadingAtPath: a), let y = FileHandle(forReadingAtPath: b) else { return false }
        defer { try? x.close(); try? y.close() }
        while true {
            let left = (try? x.read(upToCount: 1 << 20)) ?? nil
            let right = (try? y.read(upToCount: 1 << 20)) ?? nil
            guard left == right else { return false }
            if left == nil || left!.isEmpty { return true }
        }
    }
}
#else
// The benchmark spawns processes with glibc's posix_spawn types and reads
// Linux RSS figures; elsewhere it says so instead of measuring.
@main
struct Benchmark {
    static func main() {
        print("coffer-bench runs on Linux only")
    }
}
#endif
