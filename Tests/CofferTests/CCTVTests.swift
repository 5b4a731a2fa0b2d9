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
    /// this issue does not implement (the mlkem768x25519 hybrids).
    static func identities(for vector: CCTVVector) -> [any Identity]? {
        var identities: [any Identity] = []
        for text in vector.identities {
            // Only an mlkem768x25519 identity makes a vector not applicable.
            if text.hasPrefix("AGE-SECRET-KEY-PQ-1") { return nil }
            guard let identity = try? X25519.Identity(text) else { return nil }
            identities.append(identity)
        }
        identities += vector.passphrases.map { Scrypt.Identity(passphrase: Array($0.utf8)) }
        return identities
    }

    static var applicable: [CCTVVector] { vectors.filter { identities(for: $0) != nil } }

    @Test func vectorsAreLoaded() {
        #expect(Self.vectors.count == 143)
        let skipped = Self.vectors.filter { Self.identities(for: $0) == nil }.map(\.name)
        // Only vectors for mlkem768x25519 identities wait for the public-key issue.
        #expect(Self.vectors.filter { Self.identities(for: $0) == nil }
            .allSatisfy { $0.identities.contains { $0.hasPrefix("AGE-SECRET-KEY-PQ-1") } })
        print("CCTV: \(Self.applicable.count) of \(Self.vectors.count) vectors applicable; not applicable (mlkem768x25519): \(skipped.count)")
    }

    @Test(arguments: applicable.map(\.name))
    func vector(_ name: String) throws {
        let vector = try #require(Self.vectors.first { $0.name == name })
        var file = vector.body
        if vector.compression == "zlib" { file = try zlibInflate(file) }
        var source = BufferSource(file)
        var sink = BufferSink()
        var result = "success"
        do {
            try Age.decrypt(from: &source, to: &sink, identities: Self.identities(for: vector)!)
        } catch let error as CofferError {
            result = error.ageFailureClass.rawValue
        }
        #expect(result == vector.expect, "\(name): \(vector.comment ?? "")")
        let released = SHA256.hash(data: sink.bytes).hex
        if let expected = vector.payloadSHA256 {
            #expect(released == expected, "released plaintext differs")
        } else {
            #expect(sink.bytes.isEmpty, "plaintext released for a vector that expects none")
        }
    }
}
