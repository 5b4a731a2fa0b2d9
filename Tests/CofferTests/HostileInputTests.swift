import Foundation
import Testing

@testable import Coffer

/// Malformed, truncated, oversized and hostile inputs: each gets a clear
/// error of the right class, quickly, and never a crash or a hang.
@Suite struct HostileInputTests {
    let identity = X25519.Identity()

    func failure(_ bytes: [UInt8]) -> CofferError.AgeFailureClass? {
        do {
            _ = try Age.decrypt(bytes, with: [identity])
            return nil
        } catch let error as CofferError {
            #expect(!error.description.isEmpty)
            return error.ageFailureClass
        } catch {
            Issue.record("unexpected error type \(error)")
            return nil
        }
    }

    static let version = Array("age-encryption.org/v1\n".utf8)

    @Test func emptyAndGarbageInput() {
        #expect(failure([]) == .headerFailure)
        #expect(failure(Array("age-encryption".utf8)) == .headerFailure)
        #expect(failure(Array("hello world\n".utf8)) == .armorFailure)
        #expect(failure(pattern(10_000)) != nil)
        #expect(failure(Self.version) == .headerFailure)
        #expect(failure(Array("age-encryption.org/v2\n".utf8)) == .headerFailure)
    }

    @Test func aHugeLineWithoutNewlineIsRefusedEarly() {
        let started = Date()
        #expect(
            failure(Self.version + Array("-> X25519 ".utf8) + [UInt8](repeating: 0x41, count: 8 << 20))
                == .headerFailure)
        #expect(
            failure(Array("-----BEGIN AGE ENCRYPTED FILE-----\n".utf8) + [UInt8](repeating: 0x41, count: 8 << 20))
                == .armorFailure)
        #expect(Date().timeIntervalSince(started) < 10)
    }

    @Test func tooManyStanzasAreRefusedBeforeAnyUnwrap() {
        var header = Self.version
        let stanza = Array(
            "-> X25519 TEiF0ypqr+bpvcqXNyCVJpL7OuwPdVwPL7KQEbFDOCc\nhjabGXwSLQ9c3S6Lw2i+S2Tu2fiwQHHslbBN6B41FLE\n".utf8)
        for _ in 0...Header.maximumStanzas { header += stanza }
        let started = Date()
        #expect(failure(header + Array("--- WyJp9F/9FOZh7gJdheq2WIJcwHgYc8NIVh3ddwhrcNg\n".utf8)) == .headerFailure)
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func oversizedStanzaBody() {
        var header = Self.version + Array("-> X25519 TEiF0ypqr+bpvcqXNyCVJpL7OuwPdVwPL7KQEbFDOCc\n".utf8)
        for _ in 0..<400 { header += [UInt8](repeating: 0x41, count: 64) + [0x0A] }
        #expect(failure(header + [0x0A]) == .headerFailure)
    }

    @Test func hostileStanzasForOurIdentity() throws {
        let good = try identity.recipient.wrap(FileKey.random())[0]
        func file(_ stanza: Stanza) -> [UInt8] {
            Header(stanzas: [stanza], mac: [UInt8](repeating: 1, count: 32)).encoded + [UInt8](repeating: 0, count: 40)
        }
        var extra = good
        extra.arguments.append("x")
        var shortShare = good
        shortShare.arguments[0] = "AAAA"
        var longBody = good
        longBody.body.append(0)
        var emptyBody = good
        emptyBody.body = []
        for stanza in [extra, shortShare, longBody, emptyBody] {
            #expect(failure(file(stanza)) == .headerFailure)
        }
        var otherType = good
        otherType.type = "x25519"
        #expect(failure(file(otherType)) == .noMatch)
    }

    @Test func armorWithDataAfterTheEndLine() throws {
        let armored = Array(try Age.encrypt(pattern(10), to: [identity.recipient], armored: true))
        #expect(failure(armored + Array("x".utf8)) == .armorFailure)
        #expect(failure(armored + Array(" \r\n\t\n".utf8)) == nil)
    }
}
