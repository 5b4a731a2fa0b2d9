import Foundation
import PropertyBased
import Testing

@testable import Coffer

/// Deterministic, cheap test data of any size.
func pattern(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
    var state = UInt32(seed) &* 2_654_435_761 | 1
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 17
        state ^= state << 5
        return UInt8(truncatingIfNeeded: state)
    }
}

/// Calls `body` with `bytes` in a temporary regular file, open for reading.
func withFile<R>(_ bytes: [UInt8], _ body: (FileHandle) throws -> R) throws -> R {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-file-\(UUID().uuidString)")
    try Data(bytes).write(to: url)
    defer { try? FileManager.default.removeItem(at: url) }
    let handle = try FileHandle(forReadingFrom: url)
    defer { try? handle.close() }
    return try body(handle)
}

let chunk = STREAM.chunkSize
let batch = STREAM.batchChunks * chunk

@Suite struct RoundTripTests {
    let identity = X25519.Identity()

    // Sizes at every boundary the reader and writer care about: empty, one
    // byte, around one chunk, around a batch of chunks, several batches.
    static let sizes = [
        0, 1, chunk - 1, chunk, chunk + 1, 3 * chunk + 5, batch - 1, batch, batch + 1, 2 * batch + chunk, 5 << 20,
    ]

    @Test(arguments: sizes, [false, true])
    func roundTrip(size: Int, armored: Bool) throws {
        let plaintext = pattern(size)
        let file = try Age.encrypt(plaintext, to: [identity.recipient], armored: armored)
        #expect(Array(try Age.decrypt(file, with: [identity])) == plaintext)
        var fileSource = BufferSource(file)
        let info = try Age.inspect(&fileSource)
        #expect(info.armored == armored)
        #expect(info.plaintextSize == Int64(size))
        #expect(info.chunkCount == Int64(max(1, (size + chunk - 1) / chunk)))
    }

    @Test func multipleRecipientsEachOpen() throws {
        let others = (0..<3).map { _ in X25519.Identity() }
        let file = try Age.encrypt(pattern(1000), to: others.map(\.recipient))
        for other in others { #expect(Array(try Age.decrypt(file, with: [other])) == pattern(1000)) }
        #expect(throws: CofferError(.noIdentityMatched, "")) { try Age.decrypt(file, with: [identity]) }
    }

    @Test func passphraseRoundTripAndWrongPassphrase() throws {
        let recipient = try Scrypt.Recipient(passphrase: Array("correct horse".utf8), workFactor: 10)
        let file = try Age.encrypt(pattern(100), to: [recipient])
        #expect(
            Array(try Age.decrypt(file, with: [Scrypt.Identity(passphrase: Array("correct horse".utf8))]))
                == pattern(100))
        do {
            _ = try Age.decrypt(file, with: [Scrypt.Identity(passphrase: Array("wrong".utf8))])
            Issue.record("a wrong passphrase opened the file")
        } catch let error as CofferError {
            #expect(error.code == .wrongPassword)
        }
    }

    @Test func passphraseMustBeAlone() throws {
        let scrypt = try Scrypt.Recipient(passphrase: Array("pw".utf8), workFactor: 10)
        #expect(throws: CofferError(.invalidArgument, "")) { try Age.encrypt([1], to: [scrypt, identity.recipient]) }
        #expect(throws: CofferError(.invalidArgument, "")) { try Age.encrypt([1], to: [scrypt, scrypt]) }
        #expect(throws: CofferError(.invalidArgument, "")) { try Age.encrypt([1], to: []) }
    }

    /// The work factor is the attacker's: above the cap, the reader refuses
    /// before running scrypt (2^40 would never finish).
    @Test func excessiveWorkFactorIsRefusedBeforeWork() throws {
        let recipient = try Scrypt.Recipient(passphrase: Array("pw".utf8), workFactor: 10)
        var stanza = try #require(try recipient.wrap(FileKey.random()).first)
        stanza.arguments[1] = "40"
        let header = Header(stanzas: [stanza], mac: [UInt8](repeating: 0, count: 32))
        let started = Date()
        #expect(throws: CofferError(.unsupported, "")) {
            try Age.decrypt(
                header.encoded + [UInt8](repeating: 0, count: 40), with: [Scrypt.Identity(passphrase: Array("pw".utf8))]
            )
        }
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func streamingAPIWritesTheSameAsOneShot() throws {
        var source = BufferSource(pattern(200_000))
        var sink = BufferSink()
        try Age.encrypt(from: &source, to: &sink, recipients: [identity.recipient])
        var progress: [Int64] = []
        var encrypted = BufferSource(sink.bytes)
        var output = BufferSink()
        try Age.decrypt(from: &encrypted, to: &output, identities: [identity]) { progress.append($0) }
        #expect(output.bytes == pattern(200_000))
        #expect(progress.last == 200_000)
    }

    @Test func propertyRoundTrip() async {
        await propertyCheck(count: 60, input: Gen.int(in: 0...(3 * chunk)), Gen.int(in: 1...200)) { size, seed in
            let plaintext = pattern(size, seed: UInt8(seed))
            let file = try Age.encrypt(plaintext, to: [identity.recipient], armored: seed % 2 == 0)
            #expect(Array(try Age.decrypt(file, with: [identity])) == plaintext)
        }
    }
}

/// Regular files take the path where workers read their own chunks with
/// `pread`; it must agree with the streaming path byte for byte.
@Suite struct FileInputTests {
    let identity = X25519.Identity()

    @Test(arguments: [0, 1, chunk, batch - 1, batch, batch + 1, 2 * batch + 3, 4 * batch + 5, 7 * batch])
    func encryptAndDecryptFromFilesAtAnOffset(size: Int) throws {
        let prefix = [UInt8](repeating: 0xEE, count: 7)
        let plaintext = pattern(size, seed: 9)
        let encrypted = try withFile(prefix + plaintext) { handle in
            try handle.seek(toOffset: 7)
            var source = FileDescriptorSource(fileDescriptor: handle.fileDescriptor)
            var sink = BufferSink()
            try Age.encrypt(from: &source, to: &sink, recipients: [identity.recipient])
            #expect(try handle.offset() == UInt64(7 + size))
            return sink.bytes
        }
        #expect(Array(try Age.decrypt(encrypted, with: [identity])) == plaintext)
        let decrypted = try withFile(prefix + encrypted) { handle in
            try handle.seek(toOffset: 7)
            var source = FileDescriptorSource(fileDescriptor: handle.fileDescriptor)
            var sink = BufferSink()
            try Age.decrypt(from: &source, to: &sink, identities: [identity])
            return sink.bytes
        }
        #expect(decrypted == plaintext)
    }
}
