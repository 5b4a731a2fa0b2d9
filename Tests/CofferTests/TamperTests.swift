import Foundation
import PropertyBased
import Testing

@testable import Coffer

@Suite struct TamperTests {
    let identity = X25519.Identity()

    func decrypt(_ bytes: [UInt8]) throws -> [UInt8] {
        Array(try Age.decrypt(bytes, with: [identity]))
    }

    /// Every single-bit flip anywhere in a small file is rejected, and
    /// nothing of the plaintext is released.
    @Test(arguments: [0, 1, 100])
    func everyBitFlipIsRejected(size: Int) throws {
        let file = Array(try Age.encrypt(pattern(size), to: [identity.recipient]))
        for bit in 0..<(file.count * 8) {
            var damaged = file
            damaged[bit / 8] ^= 1 << UInt8(bit % 8)
            var source = BufferSource(damaged)
            var sink = BufferSink()
            #expect(throws: CofferError.self, "bit \(bit) of \(file.count * 8)") {
                try Age.decrypt(from: &source, to: &sink, identities: [identity])
            }
            #expect(sink.bytes.isEmpty)
        }
    }

    /// Truncation at, and one byte either side of, every chunk boundary.
    @Test func truncationAroundChunkBoundaries() throws {
        let file = Array(try Age.encrypt(pattern(3 * chunk + 100), to: [identity.recipient]))
        let payloadStart = file.count - (3 * chunk + 100 + 4 * 16) - 16
        var cuts: Set<Int> = [payloadStart, payloadStart + 16, file.count - 1]
        for boundary in 0...4 {
            let offset = payloadStart + 16 + boundary * STREAM.sealedChunkSize
            for delta in -17...17 where offset + delta < file.count && offset + delta > 0 {
                cuts.insert(offset + delta)
            }
        }
        for cut in cuts.sorted() {
            #expect(throws: CofferError.self, "cut at \(cut)") { try decrypt(Array(file[..<cut])) }
        }
    }

    @Test func extensionIsRejected() throws {
        for size in [0, 10, chunk, 2 * chunk] {
            let file = Array(try Age.encrypt(pattern(size), to: [identity.recipient]))
            for extra in [[0], [UInt8](repeating: 0, count: 16), [UInt8](repeating: 0, count: STREAM.sealedChunkSize)] {
                #expect(throws: CofferError.self) { try decrypt(file + extra) }
            }
        }
    }

    @Test func swappedChunksAreRejected() throws {
        let size = 3 * chunk + 10
        let file = Array(try Age.encrypt(pattern(size), to: [identity.recipient]))
        let start = file.count - (size + 4 * 16)
        let sealed = STREAM.sealedChunkSize
        var swapped = file
        swapped.replaceSubrange(start..<(start + sealed), with: file[(start + sealed)..<(start + 2 * sealed)])
        swapped.replaceSubrange((start + sealed)..<(start + 2 * sealed), with: file[start..<(start + sealed)])
        var source = BufferSource(swapped)
        var sink = BufferSink()
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try Age.decrypt(from: &source, to: &sink, identities: [identity])
        }
        #expect(sink.bytes.isEmpty, "nothing may be released before the failing chunk 0")
        // Dropping a whole middle chunk is caught too.
        var dropped = file
        dropped.removeSubrange((start + sealed)..<(start + 2 * sealed))
        #expect(throws: CofferError.self) { try decrypt(dropped) }
    }

    /// A chunk that fails in a later batch, while the batches after it are
    /// already in flight: exactly the chunks before it are released, and
    /// the error names it, whether the file is streamed or read by offset.
    @Test(arguments: [false, true])
    func aLaterChunkFailsAfterExactlyTheChunksBeforeIt(byOffset: Bool) throws {
        let size = 6 * batch + 3
        let plaintext = pattern(size, seed: 4)
        let file = Array(try Age.encrypt(plaintext, to: [identity.recipient]))
        let payloadStart = file.count - (size + (size / chunk + 1) * 16)
        let bad = 4 * STREAM.batchChunks + 2
        var damaged = file
        damaged[payloadStart + bad * STREAM.sealedChunkSize + 5] ^= 0x20
        var sink = BufferSink()
        do {
            if byOffset {
                try withFile(damaged) { handle in
                    var source = FileDescriptorSource(fileDescriptor: handle.fileDescriptor)
                    try Age.decrypt(from: &source, to: &sink, identities: [identity])
                }
            } else {
                var source = BufferSource(damaged)
                try Age.decrypt(from: &source, to: &sink, identities: [identity])
            }
            Issue.record("a damaged chunk \(bad) was accepted")
        } catch let error as CofferError {
            #expect(error.code == .payloadAuthenticationFailed)
            #expect(error.description.contains("chunk \(bad) "), "\(error)")
        }
        #expect(sink.bytes.count == bad * chunk)
        #expect(sink.bytes == Array(plaintext[..<(bad * chunk)]))
    }

    @Test func wrongIdentityAndHeaderMAC() throws {
        let file = Array(try Age.encrypt(pattern(10), to: [identity.recipient]))
        #expect(throws: CofferError(.noIdentityMatched, "")) { try Age.decrypt(file, with: [X25519.Identity()]) }
        // Re-MAC'd headers with a stanza added still fail: the MAC covers it.
        var header = try #require(try? parseHeader(file))
        header.stanzas += try X25519.Identity().recipient.wrap(FileKey.random())
        let forged = header.encoded + file[header.encodedCountOriginal...]
        #expect(throws: CofferError(.headerAuthenticationFailed, "")) { try decrypt(Array(forged)) }
    }

    @Test func randomFlipsAnywhereInLargerFiles() async throws {
        let file = Array(try Age.encrypt(pattern(2 * chunk + 7), to: [identity.recipient]))
        await propertyCheck(count: 40, input: Gen.int(in: 0..<(file.count * 8))) { bit in
            var damaged = file
            damaged[bit / 8] ^= 1 << UInt8(bit % 8)
            #expect(throws: CofferError.self) { try decrypt(damaged) }
        }
    }
}

private struct ParsedHeader {
    var stanzas: [Stanza]
    var mac: [UInt8]
    var encodedCountOriginal: Int
    var encoded: [UInt8] { Header(stanzas: stanzas, mac: mac).encoded }
}

private func parseHeader(_ file: [UInt8]) throws -> ParsedHeader {
    var reader = LineReader(BufferSource(file))
    let header = try Header.read(from: &reader)
    return ParsedHeader(stanzas: header.stanzas, mac: header.mac, encodedCountOriginal: header.encoded.count)
}
