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
}
