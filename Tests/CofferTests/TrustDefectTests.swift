import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import Coffer

#if canImport(Glibc)
import Glibc
#endif

/// Library-level regression tests for the security review of 0e8880c
/// (../shared/reviews/security-review.md), named after its findings.
@Suite struct TrustDefectTests {
    /// Every encoding of a small-order Curve25519 point (libsodium's list:
    /// 0, 1, the two order-8 points, p−1, and the non-canonical p, p+1),
    /// each also with bit 255 set, which X25519 ignores.
    static let smallOrderPoints = [
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "0100000000000000000000000000000000000000000000000000000000000080",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b880",
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f11d7",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    ].map { Hex.decode($0)! }

    // MARK: F2

    /// Each small-order encoding is refused as an `age1…` recipient, and
    /// `wrap` refuses one that arrives another way.
    @Test func F2_lowOrderRecipientsAreRefused() throws {
        for point in Self.smallOrderPoints {
            let text = Bech32.encode(hrp: "age", data: point)
            #expect(throws: CofferError(.malformed, "")) { _ = try X25519.Recipient(text) }
            let recipient = X25519.Recipient(publicKey: try Curve25519.KeyAgreement.PublicKey(rawRepresentation: point))
            #expect(throws: CofferError(.invalidArgument, "")) { _ = try recipient.wrap(FileKey.random()) }
            #expect(throws: CofferError(.invalidArgument, "")) {
                _ = try Age.encrypt(Array("payroll".utf8), to: [recipient])
            }
        }
        // The reviewer's string.
        #expect(throws: CofferError(.malformed, "")) {
            _ = try X25519.Recipient("age1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq5cu47z")
        }
        // An honest key still works.
        let identity = X25519.Identity()
        #expect(
            try Age.decrypt(Age.encrypt(Array("ok".utf8), to: [identity.recipient]), with: [identity])
                == Data("ok".utf8))
    }

    /// The X25519 half of an `age1pq1…` recipient is checked too.
    @Test func F2_lowOrderX25519HalfOfAPostQuantumRecipientIsRefused() throws {
        let honest = try MLKEM768X25519.Identity().recipient.publicKey.rawRepresentation
        for point in Self.smallOrderPoints {
            let forged = Array(honest.prefix(honest.count - 32)) + point
            let text = Bech32.encode(hrp: "age1pq", data: forged)
            #expect(throws: CofferError(.malformed, "")) { _ = try MLKEM768X25519.Recipient(text) }
        }
    }

    // MARK: F3, F4 (library)

    @Test func F3_changeSecretAddsANewPrimaryInTheSameWrite() throws {
        let old = try KeyRingFile(keyRing: KeyRing(), secret: .key(SymmetricKey(size: .bits256)))
        let kek = SymmetricKey(size: .bits256)
        var file = try KeyRingFile(keyRing: KeyRing(), secret: .key(kek))
        let oldCopy = try file.contents()
        let oldPrimary = file.keyRing.primaryID
        let newPrimary = try file.changeSecret(to: .key(SymmetricKey(size: .bits256)))
        #expect(newPrimary != oldPrimary && file.keyRing.primaryID == newPrimary)
        let sealed = try file.keyRing.seal(Array("after".utf8), context: Array("c".utf8))
        let stolen = try KeyRingFile(contents: oldCopy, secret: .key(kek))
        #expect(throws: CofferError(.keyNotFound, "")) { _ = try stolen.keyRing.open(sealed, context: Array("c".utf8)) }
        _ = old
    }

    /// KeyRingStore refuses an older copy with `rolledBack`, per ring id.
    @Test func F4_keyRingStoreRefusesAnOlderCopy() throws {
        let folder = try ScratchFolder()
        let marks = StateFileRollbackGuard(path: folder.path + "/state/generations")
        let store = KeyRingStore(
            path: folder.path + "/ring.ckr", secret: .key(SymmetricKey(size: .bits256)), rollbackGuard: marks)
        let created = try store.create()
        #expect(created.generation == 1)
        let firstID = created.keyRing.primaryID
        try store.modify { file in try file.update { try $0.rotate() } }
        let snapshot = try Data(contentsOf: URL(fileURLWithPath: store.path))
        try store.modify { file in try file.update { try $0.disable(firstID) } }
        #expect(try store.read().generation == 3)
        try snapshot.write(to: URL(fileURLWithPath: store.path))
        chmod(store.path, 0o600)
        #expect(throws: CofferError(.rolledBack, "")) { _ = try store.read() }
        #expect(throws: CofferError(.rolledBack, "")) { try store.modify { _ in } }
        #expect(try store.acceptCurrentGeneration() == 2)
        #expect(try store.read().keyRing.keys.first { $0.id == firstID }?.state == .active)
        // Without a guard the same copy opens: the mark is what refuses it.
        let unguarded = KeyRingStore(path: store.path, secret: store.secret, rollbackGuard: nil)
        #expect(try unguarded.read().generation == 2)
    }

    @Test func F4_destroyNeedsADisabledKeyAndConsent() throws {
        var ring = KeyRing()
        let first = ring.primaryID
        let sealed = try ring.seal(Array("v".utf8), context: [])
        try ring.rotate()
        #expect(throws: CofferError(.invalidArgument, "")) { try ring.destroy(first, noValuesRemain: true) }
        try ring.disable(first)
        #expect(throws: CofferError(.refused, "")) { try ring.destroy(first) }
        try ring.destroy(first, force: true)
        #expect(!ring.keys.contains { $0.id == first })
        #expect(throws: CofferError(.keyNotFound, "")) { _ = try ring.open(sealed, context: []) }
        // The destroyed key's bytes are gone from what is written.
        let file = try KeyRingFile(keyRing: ring, secret: .key(SymmetricKey(size: .bits256)))
        #expect(file.keyRing.keys.count == 1)
    }

    /// Version 1 rings still open (as generation 0) and are written back as version 3.
    @Test func F4_versionOneRingsMigrateOnWrite() throws {
        let kek = SymmetricKey(size: .bits256)
        let ring = KeyRing()
        // A version 1 file, built as 0e8880c wrote it.
        let keys = KeyRingFile.LegacyLayout.keys(base: kek, version: 1)
        let header = Array("CKR1".utf8) + [0] + keys.check
        let box = try AES.GCM._SIV.seal(
            ring.serialized(), using: keys.wrap, nonce: AES.GCM._SIV.Nonce(), authenticating: header)
        let v1 = Data(header) + box.combined
        let opened = try KeyRingFile(contents: v1, secret: .key(kek))
        #expect(opened.generation == 0 && opened.keyRing.primaryID == ring.primaryID)
        let rewritten = try opened.contents()
        #expect(rewritten.prefix(4) == Data("CKR3".utf8))
        #expect(try KeyRingFile(contents: rewritten, secret: .key(kek)).ringID == opened.ringID)
        // Two rings under one KEK share no salt (F15, linkable KEK rings):
        // the KEK slot (kind 0 at byte 29) has its own.
        let other = try KeyRingFile(keyRing: KeyRing(), secret: .key(kek)).contents()
        #expect(rewritten[29] == 0 && other[29] == 0 && rewritten[30..<46] != other[30..<46])
    }

    /// A version 1 password ring opens with one KDF run, and its version 3
    /// rewrite opens with the same password.
    @Test func F4_versionOnePasswordRingsMigrateWithOneKDFRun() throws {
        let password = Array("old ring".utf8)
        let kdf = PasswordKDF.scrypt(logN: 10, r: 8, p: 1)
        let salt = [UInt8](repeating: 7, count: 16)
        let ring = KeyRing()
        let keys = KeyRingFile.LegacyLayout.keys(base: try kdf.derive(password: password, salt: salt), version: 1)
        let header = Array("CKR1".utf8) + [1] + KeySlot.parameters(kdf) + salt + keys.check
        let box = try AES.GCM._SIV.seal(
            ring.serialized(), using: keys.wrap, nonce: AES.GCM._SIV.Nonce(), authenticating: header)
        let counter = WorkCounter()
        let rewritten = try WorkCounter.$current.withValue(counter) {
            try KeyRingFile(contents: Data(header) + box.combined, secret: .password(password)).contents()
        }
        #expect(counter.count(.kdf) == 1)
        #expect(rewritten.prefix(4) == Data("CKR3".utf8))
        #expect(try KeyRingFile(contents: rewritten, secret: .password(password)).keyRing.primaryID == ring.primaryID)
    }

    // MARK: F6

    /// The line reader's buffer stays small whatever the line endings: the
    /// reviewer's CRLF placement over 8 MiB of armor, read through inspect.
    @Test func F6_lineReaderDropsConsumedBytes() throws {
        let identity = X25519.Identity()
        let armored = try Age.encrypt(pattern(6 << 20), to: [identity.recipient], armored: true)
        var hostile: [UInt8] = []
        for line in armored.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast() {
            hostile += line
            hostile += (hostile.count + 1) % 4096 == 0 ? [0x0D, 0x0A] : [0x0A]
        }
        var reader = LineReader(BufferSource(hostile))
        var lines = 0
        var largest = 0
        while try reader.readLine(limit: 8192) != nil {
            lines += 1
            largest = max(largest, reader.bufferedByteCount)
        }
        #expect(lines > 100_000)
        #expect(largest <= 2 * 4096, "the buffer grew to \(largest) bytes")
        #expect(try Age.decrypt(Data(hostile), with: [identity]) == Data(pattern(6 << 20)))
    }

    // MARK: F11, F15 (work caps, counted)

    @Test func F11_scryptWorkIsCappedBeforeAnyRun() throws {
        let counter = WorkCounter()
        try WorkCounter.$current.withValue(counter) {
            for kdf in [
                PasswordKDF.scrypt(logN: 20, r: 8, p: 2), .scrypt(logN: 20, r: 64, p: 1), .scrypt(logN: 18, r: 8, p: 8),
                .scrypt(logN: 21, r: 1, p: 1),
            ] {
                #expect(throws: CofferError(.unsupported, "")) {
                    _ = try kdf.derive(password: Array("pw".utf8), salt: [UInt8](repeating: 0, count: 16))
                }
            }
            // At the cap it runs (the counter sees it).
            _ = try PasswordKDF.scrypt(logN: 10, r: 8, p: 1).derive(
                password: Array("pw".utf8), salt: [UInt8](repeating: 0, count: 16))
        }
        #expect(counter.count(.kdf) == 1)
    }

    /// The reviewer's flood: many ssh-rsa stanzas carrying the victim's tag
    /// cost at most 16 RSA private-key operations, then a clear error.
    @Test func F15_sshRSAFloodIsCappedAtSixteenTries() throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let identity = try SSHRSA.Identity(privateKey: key)
        let tag = Base64.encodeString(SSHRecipients.tag(wire: identity.recipient.wire))
        let stanzas = try (0..<200).map { _ in
            try Stanza(type: "ssh-rsa", arguments: [tag], body: (0..<256).map { _ in UInt8.random(in: 0...255) })
        }
        let counter = WorkCounter()
        WorkCounter.$current.withValue(counter) {
            #expect(throws: CofferError(.malformedHeader, "")) { _ = try identity.unwrap(stanzas) }
        }
        #expect(counter.count(.rsaPrivate) == SSHRSA.Identity.maximumFailures)
        // A genuine stanza among the first sixteen still opens.
        let fileKey = FileKey.random()
        let genuine = try identity.recipient.wrap(fileKey)
        #expect(try identity.unwrap(Array(stanzas.prefix(10)) + genuine) == fileKey)
    }

    // MARK: F12

    @Test func F12_randomAccessNeverTrapsOnOverflow() throws {
        let folder = try ScratchFolder()
        let identity = X25519.Identity()
        let path = folder.path + "/x.age"
        try Age.encrypt(pattern(100_000), to: [identity.recipient]).write(to: URL(fileURLWithPath: path))
        let file = try AgeRandomAccessFile(path: path, identities: [identity])
        #expect(try file.read(offset: .max - 1, count: 10) == [])
        #expect(try file.read(offset: .max, count: .max) == [])
        #expect(try file.read(offset: 99_990, count: .max) == Array(pattern(100_000)[99_990...]))
        #expect(throws: CofferError(.invalidArgument, "")) { _ = try file.read(offset: -1, count: 1) }
    }

    // MARK: F5, F9, F14 (library)

    @Test func F5_destinationsAreClassifiedBeforeWriting() throws {
        let folder = try ScratchFolder()
        #expect(try Destination.resolve("/dev/stdout") == .descriptor(1))
        #expect(try Destination.resolve("/dev/fd/7") == .descriptor(7))
        #expect(mkfifo(folder.path + "/fifo", 0o600) == 0)
        #expect(try Destination.resolve(folder.path + "/fifo") == .special(folder.path + "/fifo", kind: "a named pipe"))
        FileManager.default.createFile(atPath: folder.path + "/target", contents: Data("x".utf8))
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/link", withDestinationPath: "target")
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/dangling", withDestinationPath: "new-file")
        let canonical = URL(fileURLWithPath: folder.path).resolvingSymlinksInPath().path
        #expect(try Destination.resolve(folder.path + "/link") == .file(canonical + "/target"))
        #expect(try Destination.resolve(folder.path + "/dangling") == .file(canonical + "/new-file"))
        #expect(try AtomicFile.lockPath(for: folder.path + "/link") == canonical + "/.target.lock")
        // A device or FIFO is never replaced by an AtomicFile.
        #expect(throws: CofferError(.invalidArgument, "")) { _ = try AtomicFile(destination: folder.path + "/fifo") }
        #expect(throws: CofferError(.invalidArgument, "")) { _ = try AtomicFile(destination: folder.path) }
    }

    @Test func F14_temporaryNamesAreExact() {
        #expect(AtomicFile.isTemporaryName(".ring.coffer-0123456789ab", of: "/x/ring"))
        #expect(!AtomicFile.isTemporaryName(".ring.coffer-0123456789abc", of: "/x/ring"))
        #expect(!AtomicFile.isTemporaryName(".ring.coffer-x.coffer-0123456789ab", of: "/x/ring"))
        #expect(!AtomicFile.isTemporaryName(".ring.coffer-0123456789AB", of: "/x/ring"))
        #expect(!AtomicFile.isTemporaryName(".ring.coffer-x.lock", of: "/x/ring.coffer-x"))
    }

    /// Until `commit`, no name exists for the new contents (O_TMPFILE);
    /// `abort` leaves nothing.
    @Test func F9_noNameExistsBeforeCommit() throws {
        let folder = try ScratchFolder()
        let file = try AtomicFile(destination: folder.path + "/out")
        var sink = file.sink
        try sink.write(Array("secret plaintext".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [])
        file.abort()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [])
        let second = try AtomicFile(destination: folder.path + "/out")
        var again = second.sink
        try again.write(Array("kept".utf8))
        try second.commit()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["out"])
        #expect(throws: CofferError(.refused, "")) {
            let third = try AtomicFile(destination: folder.path + "/out")
            try third.commit(replace: false)
        }
        #expect(try String(contentsOfFile: folder.path + "/out", encoding: .utf8) == "kept")
    }
}

/// A temporary folder removed with the test.
final class ScratchFolder {
    let path: String
    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-lib-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}
