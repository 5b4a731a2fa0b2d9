import ArgumentParser
import Coffer
import Foundation

struct Tour: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "A short tour with built-in defaults: make identities, encrypt, decrypt, rekey, read at random, keep sealed records.",
        discussion:
            "Works in a new temporary directory, needs no server and no configuration, and removes what it made unless --keep is given. 'coffer tour presents' migrates the seed's AeroGear Xmas data into a store; 'coffer tour server' tours keys from a server after sign-in.",
        subcommands: [TourPresents.self, TourServer.self]
    )

    @Flag(help: "Keep the tour's directory and print where it is.")
    var keep = false

    func run() throws {
        let directory = try TourDirectory("tour", keep: keep)
        let path = directory.path

        // 1. Identities.
        let alice = X25519.Identity()
        let bob = X25519.Identity()
        step("made two X25519 identities", "alice: \(alice.recipient)\n  bob:   \(bob.recipient)")

        // 2. A sample file of three chunks and a bit, made from fixed text.
        let line = Array("Coffer keeps private data private, on Linux and on Apple platforms.\n".utf8)
        var plaintext: [UInt8] = []
        while plaintext.count < 200_000 { plaintext += line }
        try Data(plaintext).write(to: URL(fileURLWithPath: path("notes.txt")))
        step("wrote notes.txt", "\(plaintext.count) bytes")

        // 3. Encrypt to Alice.
        try transform(path("notes.txt"), path("notes.txt.age")) { source, sink in
            try Age.encrypt(from: &source, to: &sink, recipients: [alice.recipient])
        }
        let input = try Input(path: path("notes.txt.age"))
        var source = input.source
        let info = try Age.inspect(&source)
        input.finish()
        step(
            "encrypted to alice: notes.txt.age",
            "header \(info.headerSize) bytes (\(info.stanzas.map(\.type).joined(separator: ", "))), payload \(info.payloadSize) bytes in \(info.chunkCount) chunks"
        )

        // 4. Decrypt with Alice.
        let opened = try Age.decrypt(Data(contentsOf: URL(fileURLWithPath: path("notes.txt.age"))), with: [alice])
        try check(Array(opened) == plaintext, "alice's decryption differs from the original")
        step("decrypted with alice", "\(opened.count) bytes, identical to notes.txt")

        // 5. Rekey to Bob: a new header, the same payload bytes.
        try transform(path("notes.txt.age"), path("for-bob.age")) { source, sink in
            try Age.rekey(from: &source, to: &sink, identities: [alice], recipients: [bob.recipient])
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path("notes.txt.age")))
        let after = try Data(contentsOf: URL(fileURLWithPath: path("for-bob.age")))
        try check(
            before.suffix(Int(info.payloadSize)) == after.suffix(Int(info.payloadSize)), "rekeying changed the payload")
        step("rekeyed to bob: for-bob.age", "new header, payload bytes unchanged (\(info.payloadSize) bytes)")

        // 6. Bob opens it; Alice's key no longer matches its header.
        try check(Array(try Age.decrypt(after, with: [bob])) == plaintext, "bob's decryption differs")
        do {
            _ = try Age.decrypt(after, with: [alice])
            throw CLIFailure("alice could still open the rekeyed file")
        } catch let error as CofferError where error.code == .noIdentityMatched {}
        step("bob decrypts for-bob.age; alice's identity no longer matches", nil)

        // 7. Random access: one range from the middle, two chunks touched.
        let file = try AgeRandomAccessFile(path: path("for-bob.age"), identities: [bob])
        let range = try file.read(offset: 65_500, count: 100)
        try check(range == Array(plaintext[65_500..<65_600]), "random access returned the wrong bytes")
        step(
            "read bytes 65500..<65600 without decrypting from the start",
            "\"\(String(decoding: range.prefix(40), as: UTF8.self).replacingOccurrences(of: "\n", with: "\\n"))…\"")

        // 8. Armor, for pasting into mail or a ticket.
        let armored = try Age.encrypt(Data("a short secret\n".utf8), to: [bob.recipient], armored: true)
        step(
            "armored a short message for bob",
            String(decoding: armored, as: UTF8.self).split(separator: "\n").first.map(String.init))

        // 9. The seed's presents list: sealed fields, clear fields, a blind index.
        try presents(in: path("presents.sqlite"))

        directory.finish()
        let coffer = Self.invocation
        print(
            "\nTour complete. Try: \(coffer) keygen -o key.txt; \(coffer) encrypt -r age1… -o file.age file"
                + "\nThe seed's AeroGear Xmas data, migrated: \(coffer) tour presents"
                + "\nKeys from a server after sign-in: \(TourServer.invocation)")
    }

    /// How the user runs this coffer, for hints that work as typed: `swift
    /// run coffer` when it is a build's (under `.build/`), else `coffer`.
    static var isBuildProduct: Bool {
        let path = CommandLine.arguments[0]
        return path.hasPrefix(".build/") || path.contains("/.build/")
    }

    static var invocation: String {
        Self.isBuildProduct ? "swift run coffer" : "coffer"
    }

    func step(_ title: String, _ detail: String?) {
        print("✓ \(title)")
        if let detail { print("  \(detail)") }
    }

    func check(_ condition: Bool, _ message: String) throws {
        guard condition else { throw CLIFailure("tour failed: \(message)") }
    }

    private func transform(
        _ from: String, _ to: String, _ body: (inout FileDescriptorSource, inout FileDescriptorSink) throws -> Void
    ) throws {
        let input = try Input(path: from)
        defer { input.finish() }
        try Output(path: to, binary: true).write { sink in
            var source = input.source
            try body(&source, &sink)
        }
    }
}
