import ArgumentParser
import Coffer
import Foundation

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Describe an age file without decrypting it.",
        discussion:
            "Shows the recipient stanza types, header size, armor, payload size and chunk count. The header MAC is not checked: that needs a key."
    )

    @Flag(help: "Print JSON for programs.")
    var json = false

    @Argument(help: "The age file; standard input when absent or \"-\".")
    var input: String?

    func run() throws {
        let input = try Input(path: input)
        defer { input.finish() }
        var source = input.source
        let info = try Age.inspect(&source)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(info), as: UTF8.self))
            return
        }
        print("armored: \(info.armored ? "yes" : "no")")
        print(
            "header: \(info.headerSize) bytes, \(info.stanzas.count) recipient stanza\(info.stanzas.count == 1 ? "" : "s")"
        )
        for stanza in info.stanzas {
            print(
                "  \(stanza.type) (\(stanza.argumentCount) argument\(stanza.argumentCount == 1 ? "" : "s"), \(stanza.bodySize)-byte body)"
            )
        }
        print("payload: \(info.payloadSize) bytes in \(info.chunkCount) chunk\(info.chunkCount == 1 ? "" : "s")")
        print("plaintext: \(info.plaintextSize) bytes (if intact)")
    }
}
