import Crypto
import Foundation
import Testing

@testable import Coffer

/// The DER that Coffer writes itself (through swift-asn1) is the DER that
/// the specs print, and what it reads is strict.
@Suite struct KeyStructureTests {
    /// RFC 9881's seed-only ML-DSA-65 private key and its SPKI start with
    /// these bytes (the RFC's examples, Appendix C); the rest is the seed
    /// or the 1952-byte public key.
    @Test func mldsa65StructuresMatchTheRFC() throws {
        let key = try MLDSA65.PrivateKey()
        let privateDER = try KeyFiles.encode(AsymmetricPrivateKey.mldsa65(key), as: .pkcs8, der: true)
        let privatePrefix: [UInt8] = [
            0x30, 0x34, 0x02, 0x01, 0x00, 0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03,
            0x12, 0x04, 0x22, 0x80, 0x20,
        ]
        #expect(privateDER == privatePrefix + Array(key.seedRepresentation))
        let publicDER = try KeyFiles.encode(AsymmetricPublicKey.mldsa65(key.publicKey), as: .spki, der: true)
        let publicPrefix: [UInt8] = [
            0x30, 0x82, 0x07, 0xb2, 0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x12,
            0x03, 0x82, 0x07, 0xa1, 0x00,
        ]
        #expect(publicDER == publicPrefix + Array(key.publicKey.rawRepresentation))
        guard case .mldsa65(let back) = try KeyFiles.privateKey(privateDER) else {
            Issue.record("not read back as ML-DSA-65")
            return
        }
        #expect(back.seedRepresentation == key.seedRepresentation)
        #expect(try KeyFiles.publicKey(publicDER).algorithm == AsymmetricPublicKey.mldsa65(key.publicKey).algorithm)
    }

    /// SEC 1 as `openssl ec` writes it: version 1, the scalar, the named
    /// curve in [0], the point in [1]; swift-crypto reads it back.
    @Test func sec1IsWhatOpenSSLWrites() throws {
        let key = P256.Signing.PrivateKey()
        let der = try KeyFiles.encode(AsymmetricPrivateKey.p256(key), as: .sec1, der: true)
        let expected: [UInt8] =
            [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20] + Array(key.rawRepresentation)
            + [0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]
            + [0xa1, 0x44, 0x03, 0x42, 0x00] + Array(key.publicKey.x963Representation)
        #expect(der == expected)
        guard case .p256(let back) = try KeyFiles.privateKey(der) else {
            Issue.record("not read back as P-256")
            return
        }
        #expect(back.rawRepresentation == key.rawRepresentation)
        let p521 = P521.Signing.PrivateKey()
        let long = try KeyFiles.encode(AsymmetricPrivateKey.p521(p521), as: .sec1, der: true)
        guard case .p521(let back521) = try KeyFiles.privateKey(long) else {
            Issue.record("not read back as P-521")
            return
        }
        #expect(back521.rawRepresentation == p521.rawRepresentation)
    }

    /// The OID decides: X25519 and Ed25519 PKCS#8 differ only in it; an
    /// RFC 8410 key Coffer does not read (Ed448) is refused; a trailing
    /// byte, a truncation or a wrong version is not a key.
    @Test func readingIsStrict() throws {
        let x25519 = try KeyFiles.encode(
            AsymmetricPrivateKey.x25519(Curve25519.KeyAgreement.PrivateKey()), as: .pkcs8, der: true)
        #expect(try KeyFiles.privateKey(x25519).algorithm == "X25519")
        var ed25519 = x25519
        ed25519[ed25519.firstIndex(of: 0x6e)!] = 0x70
        #expect(try KeyFiles.privateKey(ed25519).algorithm == "Ed25519")
        var ed448 = x25519
        ed448[ed448.firstIndex(of: 0x6e)!] = 0x71
        for damaged in [ed448, x25519 + [0], Array(x25519.dropLast()), [0x30, 0x00]] {
            #expect(throws: CofferError.self) { try KeyFiles.privateKey(damaged) }
        }
        var version2 = x25519
        version2[4] = 2
        #expect(throws: CofferError.self) { try KeyFiles.privateKey(version2) }
        let publicX = try KeyFiles.encode(
            AsymmetricPublicKey.x25519(Curve25519.KeyAgreement.PrivateKey().publicKey), as: .spki, der: true)
        #expect(try KeyFiles.publicKey(publicX).algorithm == "X25519")
        #expect(throws: CofferError.self) { try KeyFiles.publicKey(publicX + [0]) }
    }
}
