import Coffer
import CofferTesting
import Crypto
import Foundation
import Testing

/// The C2SP age test kit: every vector this build's features cover must give
/// the expected result class, and the SHA-256 of all plaintext released
/// (failures included) must match the vector's.
@Suite struct CCTVTests {
    static let vectors: [CCTVVector] = {
        do { return try CCTVVector.load(directory: TestResources.cctvDirectory) } catch {
            print("cannot load the CCTV vectors: \(error)")
            return []
        }
    }()

    /// Identities for the vector, or nil when it needs a recipient type
    /// Coffer does not implement.
    static func identities(for vector: CCTVVector) -> [any Identity]? {
        var identities: [any Identity] = []
        for text in vector.identities {
            guard let identity = try? AgeKeys.identity(text) else { return nil }
            identities.append(identity)
        }
        identities += vector.passphrases.map { Scrypt.Identity(passphrase: Array($0.utf8)) }
        return identities
    }

    static var applicable: [CCTVVector] { vectors.filter { identities(for: $0) != nil } }

    @Test func vectorsAreLoaded() {
        #expect(Self.vectors.count == 143)
        let skipped = Self.vectors.filter { Self.identities(for: $0) == nil }.map(\.name)
        // X25519, mlkem768x25519 and scrypt cover every vector of the kit.
        #expect(skipped.isEmpty, "not applicable: \(skipped)")
        print(
            "CCTV: \(Self.applicable.count) of \(Self.vectors.count) vectors applicable; not applicable: \(skipped.count)"
        )
    }

    static func decrypt(_ file: Data, identities: [any Identity], fromFile: Bool) throws -> (String, [UInt8]) {
        var sink = BufferSink()
        var result = "success"
        do {
            if fromFile {
                let path = FileManager.default.temporaryDirectory.appendingPathComponent("cctv-\(UUID().uuidString)")
                    .path
                try file.write(to: URL(fileURLWithPath: path))
                defer { try? FileManager.default.removeItem(atPath: path) }
                let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
                defer { try? handle.close() }
                var source = FileDescriptorSource(fileDescriptor: handle.fileDescriptor)
                try Age.decrypt(from: &source, to: &sink, identities: identities)
            } else {
                var source = BufferSource(file)
                try Age.decrypt(from: &source, to: &sink, identities: identities)
            }
        } catch let error as CofferError {
            result = error.ageFailureClass.rawValue
        }
        return (result, sink.bytes)
    }

    /// How a vector is read: from memory (the streaming path) or from a
    /// regular file (workers read the payload by offset), and with which
    /// ChaCha20-Poly1305 provider.
    struct Route: Sendable, CustomTestStringConvertible {
        var fromFile: Bool
        var cipher: ChunkCipher
        var testDescription: String { "\(fromFile ? "file" : "memory"), \(cipher.rawValue)" }
    }

    static let routes = [false, true].flatMap { file in ChunkCipher.allCases.map { Route(fromFile: file, cipher: $0) } }

    /// Both providers must be present where the suite runs (Linux with
    /// OpenSSL 3): a missing one fails here instead of passing untested.
    @Test(arguments: ChunkCipher.allCases)
    func providerIsAvailable(_ cipher: ChunkCipher) {
        #if os(Linux)
        #expect(cipher.isAvailable, "\(cipher.rawValue) is not available")
        #endif
    }

    @Test(arguments: applicable.map(\.name), routes)
    func vector(_ name: String, route: Route) throws {
        guard route.cipher.isAvailable else { return }
        try ChunkCipher.$override.withValue(route.cipher) { try check(name, fromFile: route.fromFile) }
    }

    func check(_ name: String, fromFile: Bool) throws {
        let vector = try #require(Self.vectors.first { $0.name == name })
        var file = vector.body
        if vector.compression == "zlib" { file = try zlibInflate(file) }
        // Once from memory (the streaming path), once from a regular file
        // (the path where workers read the payload with pread).
        let (result, released) = try Self.decrypt(file, identities: Self.identities(for: vector)!, fromFile: fromFile)
        #expect(result == vector.expect, "\(name): \(vector.comment ?? "")")
        if let expected = vector.payloadSHA256 {
            #expect(SHA256.hash(data: released).hex == expected, "released plaintext differs")
        } else {
            #expect(released.isEmpty, "plaintext released for a vector that expects none")
        }
    }
}
