import ArgumentParser

/// A filter command's files: the input (standard input when absent or
/// "-") and where the output goes (standard output when absent).
struct FileOptions: ParsableArguments {
    @Option(name: [.customShort("o"), .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?

    @Argument(help: "The input file; standard input when absent or \"-\".")
    var input: String?

    /// The input's path, "-" for standard input.
    var inputPath: String { input ?? "-" }

    /// Reads the whole input (`what` names it in errors) and writes what
    /// `transform` makes of it; `binary` output is refused on a terminal.
    func transform(_ what: String, binary: Bool, _ transform: ([UInt8]) throws -> some Collection<UInt8>) throws {
        let input = try Input.readAll(path: inputPath, what: what)
        try KeyFile.write(try transform(input), to: output, binary: binary)
    }
}
