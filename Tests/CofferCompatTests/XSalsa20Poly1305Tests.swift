import Coffer
import Foundation
import Testing

@testable import CofferCompat

/// NaCl's secretbox and crypto_box as CofferCompat opens them, against
/// PyNaCl (libsodium) run beside the test (scripts/nacl-peer.py): 1,000
/// of its boxes opened here, 1,000 boxes made here from the same
/// primitives opened there, 200 crypto_boxes, every one also refused with
/// one bit changed; and RFC 8439's published Poly1305 vector.
@Suite struct XSalsa20Poly1305Tests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Runs the peer; its JSON lines, each an object of hex strings.
    static func peer(_ arguments: [String], input: String = "") throws -> [[String: String?]] {
        // The input from a file, so that neither side can fill a pipe and wait on the other.
        let inputFile = FileManager.default.temporaryDirectory.appendingPathComponent("nacl-\(UUID().uuidString)")
        try Data(input.utf8).write(to: inputFile)
        defer { try? FileManager.default.removeItem(at: inputFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: root + "/.venv/bin/python")
        process.arguments = [root + "/scripts/nacl-peer.py"] + arguments
        let stdout = Pipe()
        process.standardInput = try FileHandle(forReadingFrom: inputFile)
        process.standardOutput = stdout
        try process.run()
        let data = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "scripts/nacl-peer.py needs PyNaCl in .venv (scripts/test)")
        return try data.split(separator: UInt8(ascii: "\n")).map {
            try #require(try JSONSerialization.jsonObject(with: Data($0)) as? [String: String?])
        }
    }

    static func hex(_ item: [String: String?], _ name: String) throws -> [UInt8] {
        let text = try #require(item[name] ?? nil, "the peer gave no \(name)")
        return try #require(Hex.decode(text))
    }

    @Test func pyNaClSecretboxesOpenAndChangedOnesDoNot() throws {
        let vectors = try Self.peer(["secretbox", "1000"])
        #expect(vectors.count == 1000)
        for item in vectors {
            let (key, nonce, box) = (try Self.hex(item, "key"), try Self.hex(item, "nonce"), try Self.hex(item, "box"))
            #expect(try SecretBox.open(box, nonce: nonce, key: key) == Self.hex(item, "message"))
            var changed = box
            let index = Int.random(in: 0..<changed.count)
            changed[index] ^= UInt8(1) << UInt8.random(in: 0..<8)
            #expect(throws: CofferError.self) { try SecretBox.open(changed, nonce: nonce, key: key) }
            var otherNonce = nonce
            otherNonce[Int.random(in: 0..<24)] ^= 0x80
            #expect(throws: CofferError.self) { try SecretBox.open(box, nonce: otherNonce, key: key) }
        }
    }

    /// A box made from this code's HSalsa20, Salsa20 and Poly1305 (test
    /// only: the library opens, it never seals).
    static func seal(_ message: [UInt8], nonce: [UInt8], key: [UInt8]) -> [UInt8] {
        var stream = Salsa20Stream(
            key: HSalsa20.hash(key: key, input: Array(nonce[0..<16])), nonce: Array(nonce[16...]))
        var keystream: [UInt8] = []
        while keystream.count < 32 + message.count { keystream += stream.nextBlock() }
        let ciphertext = zip(message, keystream[32...]).map { $0 ^ $1 }
        return Poly1305.tag(ciphertext, key: Array(keystream[0..<32])) + ciphertext
    }

    @Test func boxesMadeFromTheseBlocksOpenInPyNaCl() throws {
        var lines: [String] = []
        var messages: [[UInt8]] = []
        for index in 0..<1000 {
            let length = index < 200 ? index : Int.random(in: 200..<5000)
            let key = (0..<32).map { _ in UInt8.random(in: 0...255) }
            let nonce = (0..<24).map { _ in UInt8.random(in: 0...255) }
            let message = (0..<length).map { _ in UInt8.random(in: 0...255) }
            messages.append(message)
            let box = Self.seal(message, nonce: nonce, key: key)
            lines.append(
                #"{"key": "\#(Hex.encode(key))", "nonce": "\#(Hex.encode(nonce))", "box": "\#(Hex.encode(box))"}"#)
        }
        let opened = try Self.peer(["open"], input: lines.joined(separator: "\n") + "\n")
        #expect(opened.count == 1000)
        for (answer, message) in zip(opened, messages) {
            #expect(try Self.hex(answer, "opened") == message)
        }
    }

    @Test func pyNaClCryptoBoxesOpen() throws {
        for item in try Self.peer(["box", "200"]) {
            let box = try Self.hex(item, "box")
            let opened = try AeroGear.openBox(
                box, nonce: try Self.hex(item, "nonce"), senderPublicKey: try Self.hex(item, "senderPublic"),
                recipientPrivateKey: SecretBytes(try Self.hex(item, "recipientPrivate")))
            #expect(Array(opened) == (try Self.hex(item, "message")))
            var changed = box
            changed[changed.count - 1] ^= 1
            #expect(throws: CofferError.self) {
                try AeroGear.openBox(
                    changed, nonce: try Self.hex(item, "nonce"), senderPublicKey: try Self.hex(item, "senderPublic"),
                    recipientPrivateKey: SecretBytes(try Self.hex(item, "recipientPrivate")))
            }
        }
    }

    /// RFC 8439, §2.5.2: the published Poly1305 example.
    @Test func rfc8439Poly1305Vector() throws {
        let key = try #require(Hex.decode("85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b"))
        let tag = Poly1305.tag(Array("Cryptographic Forum Research Group".utf8), key: key)
        #expect(Hex.encode(tag) == "a8061dc1305136c6c22b8baf0c0127a9")
    }
}
