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
    @Option(help: "Where the value belongs (e.g. notes/42/description): bound to it, not stored.")
    var context: String
    @OptionGroup var files: FileOptions

    /// The key ring `unlock` opens and the context's bytes.
    func keyRing(_ unlock: KeyRingUnlock, _ kek: KEKOptions) async throws -> (KeyRing, [UInt8]) {
        (try await unlock.unlockFile(kek).keyRing, Array(context.utf8))
    }

    /// The same, and the whole input.
    func read(_ unlock: KeyRingUnlock, _ kek: KEKOptions) async throws -> (KeyRing, [UInt8], [UInt8]) {
        let (ring, context) = try await keyRing(unlock, kek)
        return (ring, context, try Input.readAll(path: files.inputPath, what: "the input"))
    }

    /// Writes a sealed value: its text form and a line break, or its bytes.
    func write(sealed: Data, text: Bool) throws {
        if text {
            try KeyFile.write(Array((SealedValue.text(sealed) + "\n").utf8), to: files.output, binary: false)
        } else {
            try KeyFile.write(sealed, to: files.output, binary: true)
        }
    }
}

struct Seal: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Seal a small value under the key ring's primary key (docs/sealed-values.md).")
    @OptionGroup var unlock: KeyRingUnlock
    @OptionGroup var kek: KEKOptions
    @OptionGroup var options: SealOptions
    @Flag(help: "Write the text form (cs1.… base64url) instead of binary.")
    var text = false

    func run() async throws {
        let (ring, context, plaintext) = try await options.read(unlock, kek)
        try options.write(sealed: try ring.seal(plaintext, context: context), text: text)
    }
}

struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open a sealed value (binary or text form).")
    @OptionGroup var unlock: KeyRingUnlock
    @OptionGroup var kek: KEKOptions
    @OptionGroup var options: SealOptions

    func run() async throws {
        let (ring, context) = try await options.keyRing(unlock, kek)
        try options.files.transform("the input", binary: false) {
            try ring.open(try SealedValue.binary($0), context: context)
        }
    }
}

struct Rewrap: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-seal a value under the current primary key, without printing it; keeps its form.")
    @OptionGroup var unlock: KeyRingUnlock
    @OptionGroup var kek: KEKOptions
    @OptionGroup var options: SealOptions

    func run() async throws {
        let (ring, context, input) = try await options.read(unlock, kek)
        let rewrapped = try ring.rewrap(try SealedValue.binary(input), context: context)
        try options.write(sealed: rewrapped, text: input.starts(with: Array(SealedValue.textPrefix.utf8)))
    }
}
