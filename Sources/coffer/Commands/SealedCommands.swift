import ArgumentParser
import Coffer
import CofferKeychain
import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct SealOptions: ParsableArguments {
    @OptionGroup var unlock: KeyRingUnlock
    @Option(help: "Where the value belongs (e.g. notes/42/description): bound to it, not stored.")
    var context: String
    @OptionGroup var files: FileOptions
}

struct Seal: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Seal a small value under the key ring's primary key (docs/sealed-values.md).")
    @OptionGroup var options: SealOptions
    @Flag(help: "Write the text form (cs1.… base64url) instead of binary.")
    var text = false

    func run() throws {
        let file = try options.unlock.unlockFile()
        let plaintext = try Input.readAll(path: options.files.inputPath, what: "the input")
        let sealed = try file.keyRing.seal(plaintext, context: Array(options.context.utf8))
        if text {
            try KeyFile.write(Array((SealedValue.text(sealed) + "\n").utf8), to: options.files.output, binary: false)
        } else {
            try KeyFile.write(sealed, to: options.files.output, binary: true)
        }
    }
}

struct Open: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open a sealed value (binary or text form).")
    @OptionGroup var options: SealOptions

    func run() throws {
        let file = try options.unlock.unlockFile()
        let sealed = try SealedValue.binary(try Input.readAll(path: options.files.inputPath, what: "the input"))
        try KeyFile.write(
            try file.keyRing.open(sealed, context: Array(options.context.utf8)), to: options.files.output, binary: false
        )
    }
}

struct Rewrap: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-seal a value under the current primary key, without printing it; keeps its form.")
    @OptionGroup var options: SealOptions

    func run() throws {
        let file = try options.unlock.unlockFile()
        let input = try Input.readAll(path: options.files.inputPath, what: "the input")
        let rewrapped = try file.keyRing.rewrap(try SealedValue.binary(input), context: Array(options.context.utf8))
        if input.starts(with: Array(SealedValue.textPrefix.utf8)) {
            try KeyFile.write(Array((SealedValue.text(rewrapped) + "\n").utf8), to: options.files.output, binary: false)
        } else {
            try KeyFile.write(rewrapped, to: options.files.output, binary: true)
        }
    }
}
