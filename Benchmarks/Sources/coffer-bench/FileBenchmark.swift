#if canImport(Glibc)
import Coffer
import Crypto
import Foundation
import Glibc

/// File encryption through the CLI, as a new user would run it: `coffer`
/// and `age` encrypt and decrypt the same file, alternating, `runs` times
/// each, to standard output (on /dev/null) and to a file (`-o`, in the
/// same folder); each figure is the median. Beside them, the anchors of
/// the same run: ChaCha20-Poly1305 on one core through swift-crypto and
/// through `openssl speed`, and one core's `memcpy` bandwidth, from which
/// the machine's limit for this job follows.
///
///     swift build -c release --traits Server --product coffer &&
///       swift run -c release --package-path Benchmarks coffer-bench [--size-mib 512,4096] [--runs 3]
struct FileBenchmark {
    /// The root package's release build, found from this file's path.
    static var defaultCoffer: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/release/coffer").path
    }

    let coffer: String
    let age: String
    let directory: String
    let runs: Int

    struct Figure {
        var seconds: [Double] = []
        var cpu: [Double] = []
        var rss = 0
        var median: Double { seconds.sorted()[seconds.count / 2] }
        var medianCPU: Double { cpu.sorted()[cpu.count / 2] }
    }

    func run(sizes: [Int]) throws {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print("coffer-bench: \(cores) cores, files in \(directory), median of \(runs) alternating runs, \(coffer)")
        if let order = try? String(
            contentsOfFile: "/sys/module/page_reporting/parameters/page_reporting_order", encoding: .utf8)
        {
            // Free page reporting hands freed memory back to a VM's host
            // (README, "Benchmark"); an order above the largest (10) stops it.
            let value = order.trimmingCharacters(in: .whitespacesAndNewlines)
            print(
                "free page reporting to the host: page_reporting_order \(value)\((Int(value) ?? 0) > 10 ? " (off)" : "")"
            )
        }
        for size in sizes { try measure(sizeMiB: size) }
        // The anchors come last: their buffers would otherwise count in the
        // children's peak RSS (posix_spawn shares the parent's pages until exec).
        let anchors = Anchors.measure()
        print(
            String(
                format:
                    "anchor   ChaCha20-Poly1305, 64 KiB, one core: swift-crypto %.0f MiB/s, openssl speed %@ MiB/s; memcpy %.0f MiB/s",
                anchors.swiftCrypto, anchors.openssl.map { String(format: "%.0f", $0) } ?? "n/a", anchors.memcpy))
        let aead = max(anchors.swiftCrypto, anchors.openssl ?? 0) * Double(cores)
        print(
            String(
                format:
                    "limit    AEAD × cores %.0f MiB/s; with pread's copy out of the page cache on the same cores ≈ %.0f MiB/s",
                aead, 1 / (1 / aead + 1 / (anchors.memcpy * Double(cores)))))

    }

    func measure(sizeMiB: Int) throws {
        let work = "\(directory)/coffer-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let identity = X25519.Identity()
        let key = "\(work)/key.txt"
        _ = FileManager.default.createFile(
            atPath: key, contents: Data("\(identity.exportSecretKey())\n".utf8), attributes: [.posixPermissions: 0o600])
        let recipient = identity.recipient.description
        let plain = "\(work)/plain"
        try Benchmark.writeRandomFile(plain, bytes: sizeMiB << 20)

        // Correctness first: each tool opens the other's file.
        Benchmark.spawn([coffer, "encrypt", "-r", recipient, "-o", "\(work)/c.age", plain])
        Benchmark.spawn([age, "-r", recipient, "-o", "\(work)/a.age", plain])
        Benchmark.spawn([coffer, "decrypt", "-i", key, "-o", "\(work)/check", "\(work)/a.age"])
        guard Benchmark.filesEqual(plain, "\(work)/check") else {
            Benchmark.fail("coffer did not decrypt age's file to the input")
        }
        Benchmark.spawn([age, "-d", "-i", key, "-o", "\(work)/check", "\(work)/c.age"])
        guard Benchmark.filesEqual(plain, "\(work)/check") else {
            Benchmark.fail("age did not decrypt coffer's file to the input")
        }
        try? FileManager.default.removeItem(atPath: "\(work)/check")

        let bytes = Double(sizeMiB << 20)
        func rate(_ seconds: Double) -> String { String(format: "%6.0f MiB/s", bytes / seconds / 1_048_576) }
        var peakRSS = 0
        var primed: Figure? = tmpfs(work) ? Figure() : nil
        for (label, output) in [("stdout", "/dev/null"), ("file", "\(work)/out")] {
            for (job, cofferArgs, ageArgs) in [
                ("encrypt", ["encrypt", "-r", recipient, plain], ["-r", recipient, plain]),
                ("decrypt", ["decrypt", "-i", key, "\(work)/a.age"], ["-d", "-i", key, "\(work)/c.age"]),
            ] {
                var ours = Figure()
                var theirs = Figure()
                for _ in 0..<runs {
                    for (figure, command) in [(0, [coffer] + cofferArgs), (1, [age] + ageArgs)] {
                        // A file sink starts absent, as a user's new output would,
                        // and no run pays for the one before it: its dirty pages
                        // are written back (removing the output let its pages go).
                        if output != "/dev/null" {
                            try? FileManager.default.removeItem(atPath: output)
                            Self.settle()
                            if primed != nil { primed?.seconds.append(try Self.prime(bytes: sizeMiB << 20, in: work)) }
                        }
                        let result = Benchmark.spawn(command, stdout: output)
                        if figure == 0 {
                            ours.seconds.append(result.seconds)
                            ours.cpu.append(result.cpu)
                            ours.rss = max(ours.rss, result.rss)
                        } else {
                            theirs.seconds.append(result.seconds)
                            theirs.cpu.append(result.cpu)
                        }
                    }
                }
                peakRSS = max(peakRSS, ours.rss)
                print(
                    String(
                        format: "%5d MiB %@ to %@  coffer %@  age %@  ratio %.2f×  CPU s/GiB coffer %.2f age %.2f",
                        sizeMiB, job, label.padding(toLength: 6, withPad: " ", startingAt: 0),
                        rate(ours.median), rate(theirs.median), theirs.median / ours.median,
                        ours.medianCPU / bytes * 1_073_741_824, theirs.medianCPU / bytes * 1_073_741_824))
            }
        }
        print("\(sizeMiB) MiB: coffer peak RSS \(peakRSS / 1024) MiB")
        if let primed, let slowest = primed.seconds.max(), let fastest = primed.seconds.min() {
            print(
                String(
                    format:
                        "%5d MiB new file: written with 1 MiB writes just before each run to a file, then removed (both tools then write into memory the host has just backed): %.2f–%.2f s, %@–%@, the floor for one thread writing this file",
                    sizeMiB, fastest, slowest, rate(slowest), rate(fastest)))
        }
    }
}

extension FileBenchmark {
    /// Whether `path` is in tmpfs, where a new file's pages are fresh
    /// memory: on a virtual machine whose host takes back the memory the
    /// guest frees (this CI machine's virtio balloon reports free pages),
    /// writing a new file costs anywhere from 0.4 to 2.6 seconds per GiB,
    /// depending on how long the memory has been free (README, "Benchmark").
    func tmpfs(_ path: String) -> Bool {
        guard let real = realpath(path, nil) else { return false }
        defer { free(real) }
        let folder = String(cString: real)
        let mounts = (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? ""
        // The deepest mount point holding the folder decides.
        var deepest = (point: "", type: "")
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count > 2, fields[1].count > deepest.point.count else { continue }
            let inside = fields[1] == "/" || folder == fields[1] || folder.hasPrefix(fields[1] + "/")
            if inside { deepest = (fields[1], fields[2]) }
        }
        return deepest.type == "tmpfs"
    }

    /// Writes `bytes` of zeros to a new file in `folder` with 1 MiB writes
    /// and removes it: its pages go back to the kernel's free lists, where
    /// the next file's allocation takes them before the host can take them
    /// back. Returns the seconds it took.
    static func prime(bytes: Int, in folder: String) throws -> Double {
        let path = folder + "/prime"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw CofferError(.io, "cannot create \(path)") }
        let block = [UInt8](repeating: 0, count: 1 << 20)
        let start = DispatchTime.now().uptimeNanoseconds
        var left = bytes
        while left > 0 {
            let written = block.withUnsafeBytes { write(descriptor, $0.baseAddress, min(left, $0.count)) }
            guard written > 0 else {
                close(descriptor)
                throw CofferError(.io, "cannot write \(path)")
            }
            left -= written
        }
        close(descriptor)
        unlink(path)
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// Writes every dirty page back, so that no run pays for the one
    /// before it. The clean page cache stays: dropping it (as the first
    /// version of this step did) also evicted both tools' executables and
    /// libraries, and each run then paid a cold start, 0.11 s for coffer's
    /// Swift runtime and Foundation against age's one static binary.
    static func settle() {
        sync()
    }
}

/// The same run's anchors, each the best of three.
struct Anchors {
    var swiftCrypto: Double
    var openssl: Double?
    var memcpy: Double

    static func measure() -> Anchors {
        Anchors(swiftCrypto: swiftCryptoSeal(), openssl: opensslSpeed(), memcpy: memcpyBandwidth())
    }

    static func bestRate(bytes: Int, _ body: () -> Void) -> Double {
        var best = Double.infinity
        for _ in 0..<3 {
            let start = DispatchTime.now()
            body()
            best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
        }
        return Double(bytes) / best / 1_048_576
    }

    /// swift-crypto's `ChaChaPoly.seal` on 64 KiB chunks, one core, in
    /// memory. It returns a fresh buffer per call; glibc's default trims the
    /// heap when such a buffer is freed and faults the pages in again on the
    /// next call, so the anchor is measured with a fixed trim threshold (what
    /// coffer's CLI used to set for itself), which is swift-crypto at its best.
    static func swiftCryptoSeal() -> Double {
        _ = glibcMallopt(-1, 64 << 20)  // M_TRIM_THRESHOLD
        _ = glibcMallopt(-3, 1 << 20)  // M_MMAP_THRESHOLD
        let key = SymmetricKey(size: .bits256)
        let chunk = [UInt8](repeating: 0x5A, count: 64 * 1024)
        let count = 4096
        return bestRate(bytes: count * chunk.count) {
            var sink = 0
            for _ in 0..<count { sink &+= (try? ChaChaPoly.seal(chunk, using: key).combined.count) ?? 0 }
            precondition(sink > 0)
        }
    }

    /// `openssl speed -evp chacha20-poly1305 -bytes 65536`, one core; nil
    /// when openssl is missing.
    static func opensslSpeed() -> Double? {
        guard let openssl = Benchmark.which("openssl") else { return nil }
        let pipe = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = ["speed", "-evp", "chacha20-poly1305", "-bytes", "65536", "-seconds", "2"]
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // The last line: "ChaCha20-Poly1305  3735949.19k" (thousands of bytes per second).
        guard let line = output.split(separator: "\n").last(where: { $0.lowercased().hasPrefix("chacha20-poly1305") }),
            let field = line.split(separator: " ").last, field.hasSuffix("k"),
            let kilobytes = Double(field.dropLast())
        else { return nil }
        return kilobytes * 1000 / 1_048_576
    }

    /// One core copying 256 MiB between two buffers.
    static func memcpyBandwidth() -> Double {
        let size = 256 << 20
        let from = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64)
        let to = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64)
        defer {
            from.deallocate()
            to.deallocate()
        }
        memset(from.baseAddress!, 0x5A, size)
        memset(to.baseAddress!, 0, size)
        return bestRate(bytes: size) { _ = Glibc.memcpy(to.baseAddress!, from.baseAddress!, size) }
    }
}
@_silgen_name("mallopt")
private func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
#endif
