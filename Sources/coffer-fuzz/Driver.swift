import Foundation

/// Coffer's fuzz targets: one for each parser that reads bytes an attacker
/// can choose (``FuzzTarget/all``). Each input must end in success or the
/// module's own error; a crash, a trap, a hang or another error type is a
/// finding.
///
/// With libFuzzer (fuzz/run.sh builds it with AddressSanitizer), the target
/// is named by `COFFER_FUZZ_TARGET`, and libFuzzer's own arguments follow:
///     COFFER_FUZZ_TARGET=sealed .build-fuzz/release/coffer-fuzz CORPUS -max_total_time=60
/// Without libFuzzer, `coffer-fuzz TARGET FILE…` replays inputs (a corpus,
/// a finding), `coffer-fuzz --seeds FOLDER` writes well-formed inputs for
/// every target, made by Coffer's own writers, into `FOLDER/TARGET/`, and
/// `coffer-fuzz --list` names the targets.
struct FuzzTarget: Sendable {
    let name: String
    /// What it feeds, for `--list`.
    let summary: String
    let run: @Sendable ([UInt8]) -> Void
    /// Well-formed inputs to start from.
    let seeds: @Sendable () -> [[UInt8]]

    static let all: [FuzzTarget] =
        FileTargets.all + CompatTargets.all + StoreTargets.all + ServerTargets.all + ClientTargets.all

    static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }

    /// Runs `body`, which may throw only errors `expected` accepts; any
    /// other error is a finding.
    static func expect(_ what: String, _ expected: (any Error) -> Bool, _ body: () throws -> Void) {
        do { try body() } catch  where expected(error) {} catch {
            fatalError("\(what) threw \(type(of: error)), not the module's error: \(error)")
        }
    }

    /// Runs async `body` to its end, as ``expect(_:_:_:)-(_,_,() throws -> Void)`` runs a call.
    static func expect(
        _ what: String, _ expected: @escaping @Sendable (any Error) -> Bool,
        _ body: @escaping @Sendable () async throws -> Void
    ) {
        blocking {
            do { try await body() } catch  where expected(error) {} catch {
                fatalError("\(what) threw \(type(of: error)), not the module's error: \(error)")
            }
        }
    }

    /// Runs async `body` to its end on a task and waits for it: libFuzzer
    /// calls the target synchronously. The task lets go of `body` (and of
    /// the input it holds) before it signals, so that nothing of the input
    /// is still held when libFuzzer looks for leaks.
    static func blocking(_ body: @escaping @Sendable () async -> Void) {
        final class Work: @unchecked Sendable {
            var body: (@Sendable () async -> Void)?
            init(_ body: @escaping @Sendable () async -> Void) { self.body = body }
        }
        let work = Work(body)
        let done = DispatchSemaphore(value: 0)
        Task {
            await work.body?()
            work.body = nil
            done.signal()
        }
        done.wait()
    }
}

/// `--list` and `--seeds FOLDER`, in either build.
enum Commands {
    static func run(_ arguments: [String]) throws -> Bool {
        switch arguments.first {
        case "--list":
            for target in FuzzTarget.all { print("\(target.name)\t\(target.summary)") }
        case "--seeds" where arguments.count == 2:
            let folder = URL(fileURLWithPath: arguments[1])
            for target in FuzzTarget.all {
                let into = folder.appendingPathComponent(target.name)
                try FileManager.default.createDirectory(at: into, withIntermediateDirectories: true)
                for (number, seed) in target.seeds().enumerated() {
                    try Data(seed).write(to: into.appendingPathComponent("made-\(number)"))
                }
            }
        default: return false
        }
        return true
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("coffer-fuzz: \(message)\n".utf8))
        exit(2)
    }
}

#if COFFER_LIBFUZZER
/// libFuzzer's driver, for programs that keep their own `main` (SwiftPM
/// names an executable's entry point itself, so libFuzzer's `main` is not
/// linked in).
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The target libFuzzer drives, chosen once before the driver starts.
nonisolated(unsafe) var chosenTarget: FuzzTarget?

@main
struct Fuzz {
    static func main() throws {
        if try Commands.run(Array(CommandLine.arguments.dropFirst())) { return }
        let name = ProcessInfo.processInfo.environment["COFFER_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget.named(name) else {
            Commands.fail("COFFER_FUZZ_TARGET names no target (--list names them)")
        }
        chosenTarget = target
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(
            runFuzzerDriver(&argc, &argv) { data, size in
                chosenTarget!.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
                return 0
            })
    }
}
#else
@main
struct Replay {
    static func main() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if try Commands.run(arguments) { return }
        guard arguments.count >= 2 else { Commands.fail("usage: coffer-fuzz --list | --seeds FOLDER | TARGET FILE...") }
        guard let target = FuzzTarget.named(arguments[0]) else {
            Commands.fail("no target \(arguments[0]) (--list names them)")
        }
        for path in arguments.dropFirst() {
            target.run(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        }
        print("replayed \(arguments.count - 1) inputs through \(arguments[0]) without a finding")
    }
}
#endif
