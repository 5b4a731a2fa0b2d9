#if canImport(Glibc)
import Coffer
import Crypto
import Foundation
import Glibc

/// Coffer's measurements, each beside its anchor measured in the same run.
/// Not tests: figures to read. See `FileBenchmark` for the default one.
@main
struct Benchmark {
    static func main() throws {
        if CommandLine.arguments.dropFirst().first == "keychain" {
            if CommandLine.arguments.contains("--secret-service") {
                #if SecretService
                try KeychainBenchmark.runSecretService()
                return
                #else
                print(
                    "coffer-bench: built without the SecretService trait (swift build -c release --traits SecretService)"
                )
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
        if CommandLine.arguments.dropFirst().first == "store-postgres" {
            var rows = 1_000_000
            if let index = CommandLine.arguments.firstIndex(of: "--rows"), index + 1 < CommandLine.arguments.count {
                rows = Int(CommandLine.arguments[index + 1]) ?? rows
            }
            try StorePostgresBenchmark.run(rows: rows)
            return
        }
        if CommandLine.arguments.dropFirst().first == "store-set" {
            var verifyRows = 1_000_000
            // On disk, as an app's store is: a put's commit waits for it.
            var directory = NSTemporaryDirectory()
            var arguments = CommandLine.arguments.dropFirst(2).makeIterator()
            while let argument = arguments.next() {
                switch argument {
                case "--verify-rows": verifyRows = Int(arguments.next() ?? "") ?? verifyRows
                case "--dir": directory = arguments.next() ?? directory
                default: fail("usage: coffer-bench store-set [--verify-rows N] [--dir DIR]")
                }
            }
            try StoreSetBenchmark.run(verifyRows: verifyRows, directory: directory)
            return
        }
        if CommandLine.arguments.dropFirst().first == "store-tenants" {
            var (tenants, perTenant) = (10_000, 30)
            var directory = NSTemporaryDirectory()
            var arguments = CommandLine.arguments.dropFirst(2).makeIterator()
            while let argument = arguments.next() {
                switch argument {
                case "--tenants": tenants = Int(arguments.next() ?? "") ?? tenants
                case "--per-tenant": perTenant = Int(arguments.next() ?? "") ?? perTenant
                case "--dir": directory = arguments.next() ?? directory
                default: fail("usage: coffer-bench store-tenants [--tenants N] [--per-tenant M] [--dir DIR]")
                }
            }
            guard tenants > 1, perTenant > 0 else { fail("--tenants takes 2 or more, --per-tenant 1 or more") }
            try StoreTenantBenchmark.run(tenants: tenants, perTenant: perTenant, directory: directory)
            return
        }
        if CommandLine.arguments.dropFirst().first == "store-import" {
            var rows = [50_000, 1_000_000]
            var directory = NSTemporaryDirectory()
            var coffer = FileBenchmark.defaultCoffer
            var arguments = CommandLine.arguments.dropFirst(2).makeIterator()
            while let argument = arguments.next() {
                switch argument {
                case "--rows": rows = (arguments.next() ?? "").split(separator: ",").compactMap { Int($0) }
                case "--dir": directory = arguments.next() ?? directory
                case "--coffer": coffer = arguments.next() ?? coffer
                default: fail("usage: coffer-bench store-import [--rows 50000,1000000] [--dir DIR] [--coffer PATH]")
                }
            }
            try ImportBenchmark.run(rows: rows, directory: directory, coffer: coffer)
            return
        }
        if CommandLine.arguments.dropFirst().first == "store" {
            var rows = 1_000_000
            var directory = NSTemporaryDirectory()
            if let index = CommandLine.arguments.firstIndex(of: "--rows"), index + 1 < CommandLine.arguments.count {
                rows = Int(CommandLine.arguments[index + 1]) ?? rows
            }
            if let index = CommandLine.arguments.firstIndex(of: "--dir"), index + 1 < CommandLine.arguments.count {
                directory = CommandLine.arguments[index + 1]
            }
            try StoreBenchmark.run(rows: rows, directory: directory)
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
        var sizes = [512, 4096]
        var runs = 3
        var directory = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        var coffer = FileBenchmark.defaultCoffer
        var arguments = CommandLine.arguments.dropFirst().makeIterator()
        while let argument = arguments.next() {
            switch argument {
            case "--size-mib": sizes = (arguments.next() ?? "").split(separator: ",").compactMap { Int($0) }
            case "--dir": directory = arguments.next() ?? directory
            case "--runs": runs = Int(arguments.next() ?? "") ?? runs
            case "--coffer": coffer = arguments.next() ?? coffer
            default:
                print(
                    "usage: coffer-bench [--size-mib 512,4096] [--dir DIR] [--runs 3] [--coffer PATH] | coffer-bench keys|sealed [--seconds N] | coffer-bench keychain [--dir DIR | --secret-service] | coffer-bench store [--rows N] [--dir DIR] | coffer-bench store-import [--rows 50000,1000000] [--dir DIR] [--coffer PATH] | coffer-bench store-set [--verify-rows N] [--dir DIR] | coffer-bench store-tenants [--tenants N] [--per-tenant M] [--dir DIR] | coffer-bench store-postgres [--rows N] (under scripts/with-postgres)"
                )
                exit(64)
            }
        }
        guard !sizes.isEmpty, runs > 0 else { fail("--size-mib takes sizes like 512,4096 and --runs a positive count") }
        guard FileManager.default.isExecutableFile(atPath: coffer) else {
            fail(
                "no coffer binary at \(coffer): run swift build -c release --traits Server --product coffer in the repository root, or pass --coffer PATH"
            )
        }
        guard let age = which("age") else { fail("the age CLI is not on PATH (apt-get install age)") }
        try FileBenchmark(coffer: coffer, age: age, directory: directory, runs: runs).run(sizes: sizes)
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("coffer-bench: \(message)\n".utf8))
        exit(1)
    }

    static func which(_ name: String) -> String? {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs a command to completion with standard output on `stdout`;
    /// returns wall time, CPU time (user + system) and peak RSS (KiB).
    @discardableResult
    static func spawn(_ command: [String], stdout: String = "/dev/null", environment: [String: String] = [:]) -> (
        seconds: Double, cpu: Double, rss: Int
    ) {
        var pid: pid_t = 0
        let argv = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let start = DispatchTime.now()
        // Standard output goes to /dev/null (commands with -o write no stdout).
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { $1 }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        guard posix_spawn(&pid, command[0], &actions, nil, argv, envp) == 0 else { fail("cannot run \(command[0])") }
        var status: Int32 = 0
        var usage = rusage()
        wait4(pid, &status, 0, &usage)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        guard status == 0 else { fail("\(command.joined(separator: " ")) failed with status \(status)") }
        func time(_ value: timeval) -> Double { Double(value.tv_sec) + Double(value.tv_usec) / 1e6 }
        return (seconds, time(usage.ru_utime) + time(usage.ru_stime), usage.ru_maxrss)
    }

    static func writeRandomFile(_ path: String, bytes: Int) throws {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
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
        defer {
            try? x.close()
            try? y.close()
        }
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
