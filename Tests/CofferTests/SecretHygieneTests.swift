@testable import Coffer
import Testing

@Suite struct SecretHygieneTests {
    static let secret = "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX"

    @Test func descriptionsAreRedacted() throws {
        let identity = try X25519.Identity(Self.secret)
        for text in [String(describing: identity), String(reflecting: identity), String(describing: FileKey.random()),
                     String(describing: Scrypt.Identity(passphrase: Array("hunter2".utf8))),
                     String(describing: try Scrypt.Recipient(passphrase: Array("hunter2".utf8)))] {
            #expect(text.contains("redacted"))
            #expect(!text.contains("GFPYYSJZ") && !text.contains("hunter2"))
        }
    }

    @Test func identityFileErrorsDoNotEchoSecrets() throws {
        let damaged = String(Self.secret.dropLast()) + "Y"
        let contents = "# a comment\n\n\(Self.secret)\n\(damaged)\n"
        do {
            _ = try AgeKeys.identities(fileContents: contents, name: "keys.txt")
            Issue.record("a damaged identity was accepted")
        } catch let error as CofferError {
            #expect(error.code == .malformed)
            #expect(error.reason.contains("line 4 of keys.txt"))
            #expect(!error.description.contains("GFPYYSJZ"))
        }
    }

    @Test func identityFilesSkipCommentsAndBlankLines() throws {
        let identities = try AgeKeys.identities(fileContents: "# created\r\n\n  \(Self.secret)  \r\n")
        #expect(identities.count == 1)
        #expect(throws: CofferError(.malformed, "")) { try AgeKeys.identities(fileContents: "# nothing here\n") }
    }

    @Test func fileKeysCompareByValue() throws {
        let bytes = [UInt8](repeating: 7, count: 16)
        #expect(try FileKey(unwrapped: bytes) == FileKey(unwrapped: bytes))
        #expect(try FileKey(unwrapped: bytes) != FileKey.random())
        #expect(throws: CofferError(.malformedHeader, "")) { try FileKey(unwrapped: [UInt8](repeating: 7, count: 17)) }
    }
}
