import Foundation
import PropertyBased
import Testing

@testable import Coffer

@Suite struct RekeyAndRandomAccessTests {
    let alice = X25519.Identity()
    let bob = X25519.Identity()

    func rekey(_ file: Data, armored: Bool = false, verify: Bool = true) throws -> [UInt8] {
        var source = BufferSource(file)
        var sink = BufferSink()
        try Age.rekey(
            from: &source, to: &sink, identities: [alice], recipients: [bob.recipient], armored: armored,
            verifyPayload: verify)
        return sink.bytes
    }

    @Test(arguments: [0, 1, chunk, 3 * chunk + 1])
    func rekeyKeepsThePayloadBytes(size: Int) throws {
        let file = try Age.encrypt(pattern(size), to: [alice.recipient])
        let rekeyed = try rekey(file)
        let payload = 16 + size + 16 * max(1, (size + chunk - 1) / chunk)
        #expect(rekeyed.suffix(payload) == Array(file.suffix(payload)))
        #expect(Array(try Age.decrypt(rekeyed, with: [bob])) == pattern(size))
        #expect(throws: CofferError(.noIdentityMatched, "")) { try Age.decrypt(rekeyed, with: [alice]) }
    }

    @Test func rekeyArmoredInAndOut() throws {
        let file = try Age.encrypt(pattern(5000), to: [alice.recipient], armored: true)
        let rekeyed = try rekey(file, armored: true)
        #expect(rekeyed.starts(with: Array("-----BEGIN AGE ENCRYPTED FILE-----\n".utf8)))
        #expect(Array(try Age.decrypt(rekeyed, with: [bob])) == pattern(5000))
    }

    @Test func rekeyRefusesADamagedPayload() throws {
        var file = try Age.encrypt(pattern(3 * chunk), to: [alice.recipient])
        file[file.count - 5] ^= 1
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) { try rekey(file) }
        // Without verification the bytes are copied as they are.
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try Age.decrypt(try rekey(file, verify: false), with: [bob])
        }
    }

    func temporaryFile(_ bytes: some DataProtocol) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-test-\(UUID().uuidString)")
            .path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func randomAccessMatchesFullDecryption() async throws {
        let size = 5 * chunk + 123
        let plaintext = pattern(size)
        let path = try temporaryFile(try Age.encrypt(plaintext, to: [alice.recipient]))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try AgeRandomAccessFile(path: path, identities: [alice])
        #expect(file.plaintextSize == Int64(size))
        await propertyCheck(count: 80, input: Gen.int(in: 0...(size + 10)), Gen.int(in: 0...(2 * chunk + 3))) {
            offset, count in
            let expected = Array(plaintext[min(offset, size)..<min(size, offset + count)])
            let read = try file.read(offset: Int64(offset), count: count)
            #expect(read == expected)
        }
        for boundary in [chunk - 1, chunk, 5 * chunk] {
            #expect(
                try file.read(offset: Int64(boundary), count: 2) == Array(plaintext[boundary..<min(size, boundary + 2)])
            )
        }
    }

    @Test func randomAccessRefusesTruncatedExtendedAndArmoredFiles() throws {
        let file = Array(try Age.encrypt(pattern(2 * chunk + 1), to: [alice.recipient]))
        for damaged in [Array(file.dropLast(1)), file + [0], Array(file.dropLast(17))] {
            let path = try temporaryFile(damaged)
            defer { try? FileManager.default.removeItem(atPath: path) }
            #expect(throws: CofferError.self) { try AgeRandomAccessFile(path: path, identities: [alice]) }
        }
        let armored = try temporaryFile(try Age.encrypt(pattern(10), to: [alice.recipient], armored: true))
        defer { try? FileManager.default.removeItem(atPath: armored) }
        #expect(throws: CofferError(.unsupported, "")) { try AgeRandomAccessFile(path: armored, identities: [alice]) }
    }

    @Test func randomAccessDetectsAModifiedMiddleChunk() throws {
        var bytes = Array(try Age.encrypt(pattern(3 * chunk), to: [alice.recipient]))
        bytes[bytes.count - 2 * STREAM.sealedChunkSize + 10] ^= 0x80
        let path = try temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try AgeRandomAccessFile(path: path, identities: [alice])
        #expect(try file.read(offset: 0, count: 10) == Array(pattern(3 * chunk)[0..<10]))
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try file.read(offset: Int64(chunk), count: 10)
        }
    }
}
