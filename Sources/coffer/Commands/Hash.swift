import ArgumentParser
import Coffer
import Crypto
import Foundation

extension FileDigest.Algorithm: ExpressibleByArgument {}

struct DigestOptions: ParsableArguments {
    @Option(help: "sha256, sha384, sha512, sha224 (not for hmac), or the insecure sha1 and md5.")
    var algorithm: FileDigest.Algorithm = .sha256

    @Argument(help: "Files to read; standard input when none or \"-\".")
    var files: [String] = []

    /// Prints `hex  name` lines (the format of sha256sum), preceded by a
    /// warning comment line for the insecure algorithms.
    func run(_ compute: (inout FileDescriptorSource) throws -> [UInt8]) throws {
        if algorithm.isInsecure {
            print(
                "# \(algorithm.rawValue) is insecure (collisions are practical): use it only to compare old checksums")
        }
        for path in files.isEmpty ? ["-"] : files {
            let input = try Input(path: path)
            defer { input.finish() }
            var source = input.source
            let digest = try compute(&source)
            print("\(Hex.encode(digest))  \(path)")
        }
    }
}

struct Hash: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the digest of files.")
    @OptionGroup var options: DigestOptions

    func run() throws {
        try options.run { try FileDigest.hash(&$0, algorithm: options.algorithm) }
    }
}

struct Hmac: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the HMAC of files under a key read from a file.")

    @Option(help: "The key: this file's raw bytes (at least 16).") var keyFile: String

    @OptionGroup var options: DigestOptions

    func run() throws {
        let bytes = try Input.readAll(path: keyFile, what: "the key file")
        guard bytes.count >= 16 else {
            throw CLIFailure(
                "the key file \(keyFile) holds \(bytes.count) bytes; an HMAC key needs at least 16", status: 64)
        }
        let key = SymmetricKey(data: bytes)
        try options.run { try FileDigest.hmac(&$0, key: key, algorithm: options.algorithm) }
    }
}
