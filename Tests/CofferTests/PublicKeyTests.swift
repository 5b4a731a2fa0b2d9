import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import Coffer

/// One key of each kind (RSA generation is slow: one 2048-bit key is shared).
enum SampleKeys {
    static let rsa = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static var all: [AsymmetricPrivateKey] {
        [
            .ed25519(Curve25519.Signing.PrivateKey()), .x25519(Curve25519.KeyAgreement.PrivateKey()),
            .p256(P256.Signing.PrivateKey()), .p384(P384.Signing.PrivateKey()), .p521(P521.Signing.PrivateKey()),
            .rsa(rsa), .mldsa65(try! MLDSA65.PrivateKey()),
        ]
    }
}

func spki(_ key: AsymmetricPublicKey) throws -> [UInt8] { try KeyFiles.encode(key, as: .spki, der: true) }

@Suite struct KeyFileTests {
    /// Every key, written in every format that can hold it (PEM and DER),
    /// reads back as the same key.
    @Test func everyFormatRoundTrips() throws {
        var written = 0
        for key in SampleKeys.all {
            let expected = try spki(key.publicKey)
            for format in KeyFiles.Format.allCases {
                for der in [false, true] {
                    if let bytes = try? KeyFiles.encode(key, as: format, der: der) {
                        #expect(
                            try spki(KeyFiles.privateKey(bytes).publicKey) == expected,
                            "\(key.algorithm) \(format) der: \(der)")
                        written += 1
                    }
                    if let bytes = try? KeyFiles.encode(key.publicKey, as: format, der: der) {
                        #expect(
                            try spki(KeyFiles.publicKey(bytes)) == expected,
                            "\(key.algorithm) public \(format) der: \(der)")
                        written += 1
                    }
                }
            }
        }
        #expect(written >= 40)
    }

    @Test func apple97BytesAreAP256PrivateKeyOrAP384Point() throws {
        let p256 = P256.Signing.PrivateKey()
        let p384 = P384.Signing.PrivateKey()
        #expect(try spki(KeyFiles.publicKey(p256.x963Representation)) == spki(.p256(p256.publicKey)))
        #expect(try spki(KeyFiles.publicKey(p384.publicKey.x963Representation)) == spki(.p384(p384.publicKey)))
        #expect(try KeyFiles.privateKey(Array(p256.x963Representation)).algorithm == "P-256")
    }

    /// Truncations and byte flips of every kind of key file: a CofferError
    /// or (for a flip that lands in a still-valid key) a key; never a crash.
    @Test func damagedKeyFilesGiveClearErrors() throws {
        var files: [[UInt8]] = []
        for key in SampleKeys.all {
            for format in KeyFiles.Format.allCases {
                for der in [false, true] {
                    if let bytes = try? KeyFiles.encode(key, as: format, der: der) { files.append(bytes) }
                }
            }
        }
        var generator = SystemRandomNumberGenerator()
        var errors = 0
        for file in files {
            for length in stride(from: 0, to: file.count, by: max(1, file.count / 40)) {
                do { _ = try KeyFiles.privateKey(file.prefix(length)) } catch is CofferError { errors += 1 }
            }
            for _ in 0..<30 {
                var damaged = file
                damaged[Int.random(in: 0..<damaged.count, using: &generator)] ^= UInt8.random(
                    in: 1...255, using: &generator)
                do { _ = try KeyFiles.privateKey(damaged) } catch is CofferError { errors += 1 }
                do { _ = try KeyFiles.publicKey(damaged) } catch is CofferError { errors += 1 }
            }
        }
        #expect(errors > files.count * 20)
    }

    @Test func hostileInputs() throws {
        func expectError(
            _ bytes: [UInt8], _ code: CofferError.Code, containing text: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            do {
                _ = try KeyFiles.privateKey(bytes)
                Issue.record("accepted", sourceLocation: sourceLocation)
            } catch let error as CofferError {
                #expect(
                    error.code == code && error.description.contains(text), "\(error)", sourceLocation: sourceLocation)
            } catch { Issue.record("\(error)", sourceLocation: sourceLocation) }
        }
        // An OpenSSH key whose inner length claims 4 GiB.
        var writer = SSHWireWriter()
        writer.raw(Array("openssh-key-v1\0".utf8))
        writer.string("none")
        writer.string("none")
        writer.string([UInt8]())
        writer.uint32(1)
        writer.uint32(0xffff_ffff)
        expectError(
            Array(PEM.encode(label: "OPENSSH PRIVATE KEY", writer.bytes).utf8), .malformed, containing: "truncated")
        expectError(
            Array("-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n".utf8), .malformed,
            containing: "base64")
        expectError(Array("-----BEGIN PRIVATE KEY-----\nAAAA\n".utf8), .malformed, containing: "END")
        expectError(
            Array("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8), .malformed,
            containing: "PKCS#8")
        expectError(
            Array("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n".utf8),
            .unsupported, containing: "encrypted")
        expectError(
            Array(
                "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n"
                    .utf8), .unsupported, containing: "encrypted")
        expectError(
            Array("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOUcnx/wOXy8xxlFQ48A4YhsM2lCSuM8M6XAGaNxISwF".utf8),
            .invalidArgument, containing: "public key")
        expectError([UInt8](repeating: 7, count: 32), .malformed, containing: "expected")
        // A point not on the curve, as Apple's 65-byte form and inside an SPKI.
        var offCurve = Array(P256.Signing.PrivateKey().publicKey.x963Representation)
        offCurve[64] ^= 1
        #expect(throws: CofferError.self) { try KeyFiles.publicKey(offCurve) }
        var spkiBytes = try spki(.p256(P256.Signing.PrivateKey().publicKey))
        spkiBytes[spkiBytes.count - 1] ^= 1
        #expect(throws: CofferError.self) { try KeyFiles.publicKey(spkiBytes) }
        // An OpenSSH public line naming one type and holding another.
        let ed = try OpenSSH.publicKeyLine(.ed25519(Curve25519.Signing.PrivateKey().publicKey))
        #expect(throws: CofferError.self) { try OpenSSH.parsePublicKeyLine("ssh-rsa " + ed.split(separator: " ")[1]) }
        // Small RSA keys are refused by size.
        #expect(throws: CofferError.self) {
            try RSAKeys.publicKey(n: [0xc1] + [UInt8](repeating: 0x11, count: 127), e: [1, 0, 1])
        }
        // A description never holds key material.
        let key = AsymmetricPrivateKey.ed25519(Curve25519.Signing.PrivateKey())
        #expect(String(describing: key) == "Ed25519 private key (<redacted>)")
    }

    /// An OpenSSH Ed25519 key Coffer writes reads back, with its padding,
    /// check numbers and public half verified.
    @Test func openSSHPrivateKeysAreChecked() throws {
        let key = AsymmetricPrivateKey.ed25519(Curve25519.Signing.PrivateKey())
        let pem = try OpenSSH.privateKeyPEM(key, comment: "a comment")
        let block = try PEM.decode(pem)
        #expect(try spki(OpenSSH.privateKey(bytes: block.bytes).publicKey) == spki(key.publicKey))
        // Change the last byte (padding) and a byte of the check numbers.
        var badPadding = block.bytes
        badPadding[badPadding.count - 1] ^= 0x40
        #expect(throws: CofferError.self) { try OpenSSH.privateKey(bytes: badPadding) }
        // magic 15, "none" 8, "none" 8, options 4, count 4, public key 4 + 51, section length 4.
        let checkOffset = 15 + 8 + 8 + 4 + 4 + 55 + 4
        var badCheck = block.bytes
        badCheck[checkOffset] ^= 1
        #expect(throws: CofferError.self) { try OpenSSH.privateKey(bytes: badCheck) }
    }
}

@Suite struct PublicKeyOperationTests {
    @Test func oaepWithALabelRoundTripsAndRejects() throws {
        let key = SampleKeys.rsa
        let label = Data("age-encryption.org/v1/ssh-rsa".utf8)
        let limit = RSAKeys.oaepSHA256Limit(modulusBytes: 256)
        #expect(limit == 190)
        for size in [0, 16, limit] {
            let message = pattern(size)
            let ciphertext = try RSAKeys.oaepSHA256Encrypt(message, label: label, to: key.publicKey)
            #expect(ciphertext.count == 256)
            #expect(try RSAKeys.oaepSHA256Decrypt(ciphertext, label: label, with: key) == message)
            // The wrong label, a flipped bit, a short ciphertext: one error.
            #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
                try RSAKeys.oaepSHA256Decrypt(ciphertext, label: Data("other".utf8), with: key)
            }
            var flipped = ciphertext
            flipped[100] ^= 1
            #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
                try RSAKeys.oaepSHA256Decrypt(flipped, label: label, with: key)
            }
            #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
                try RSAKeys.oaepSHA256Decrypt(ciphertext.dropLast(), label: label, with: key)
            }
        }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try RSAKeys.oaepSHA256Encrypt(pattern(limit + 1), label: label, to: key.publicKey)
        }
        // Without a label, our encoding is what swift-crypto's OAEP-SHA-256 opens.
        let plain = try RSAKeys.oaepSHA256Encrypt(pattern(32), label: Data(), to: key.publicKey)
        let opened = try _RSA.Encryption.PrivateKey(derRepresentation: key.derRepresentation).decrypt(
            plain, padding: .PKCS1_OAEP_SHA256)
        #expect(Array(opened) == pattern(32))
        // A ciphertext ≥ n is refused.
        #expect(throws: CofferError.self) {
            try RSAKeys.oaepSHA256Decrypt([UInt8](repeating: 0xff, count: 256), label: label, with: key)
        }
    }

    @Test func rsaEncryptionLimitsAndKeyTypes() throws {
        let key = AsymmetricPrivateKey.rsa(SampleKeys.rsa)
        #expect(RSAEncryption.limit(modulusBits: 2048, hash: .sha256) == 190)
        #expect(RSAEncryption.limit(modulusBits: 2048, hash: .sha1) == 214)
        for hash in RSAEncryption.Hash.allCases {
            let ciphertext = try RSAEncryption.encrypt(pattern(20), to: key.publicKey, hash: hash)
            #expect(Array(try RSAEncryption.decrypt(ciphertext, with: key, hash: hash)) == pattern(20))
        }
        do {
            _ = try RSAEncryption.encrypt(pattern(191), to: key.publicKey)
            Issue.record("accepted")
        } catch let error as CofferError {
            #expect(error.code == .invalidArgument && error.description.contains("at most 190"))
        }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try RSAEncryption.encrypt(pattern(1), to: .p256(P256.Signing.PrivateKey().publicKey))
        }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try RSAEncryption.decrypt(pattern(256), with: .ed25519(Curve25519.Signing.PrivateKey()))
        }
        #expect(throws: CofferError(.malformed, "")) { try RSAEncryption.decrypt(pattern(255), with: key) }
    }

    @Test func agreementIsSymmetricAndChecksCurves() throws {
        let pairs: [(AsymmetricPrivateKey, AsymmetricPrivateKey)] = [
            (.p256(P256.Signing.PrivateKey()), .p256(P256.Signing.PrivateKey())),
            (.p384(P384.Signing.PrivateKey()), .p384(P384.Signing.PrivateKey())),
            (.p521(P521.Signing.PrivateKey()), .p521(P521.Signing.PrivateKey())),
            (.x25519(Curve25519.KeyAgreement.PrivateKey()), .x25519(Curve25519.KeyAgreement.PrivateKey())),
        ]
        for (a, b) in pairs {
            for kdf in KeyAgreement.KDF.allCases {
                let ab = try KeyAgreement.agree(
                    privateKey: a, peer: b.publicKey, kdf: kdf, size: 273, sharedInfo: Data([1, 2]))
                let ba = try KeyAgreement.agree(
                    privateKey: b, peer: a.publicKey, kdf: kdf, size: 273, sharedInfo: Data([1, 2]))
                #expect(ab == ba && ab.bitCount == 273 * 8)
                let other = try KeyAgreement.agree(
                    privateKey: a, peer: b.publicKey, kdf: kdf, size: 273, sharedInfo: Data([1, 3]))
                #expect(ab != other)
            }
        }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try KeyAgreement.agree(privateKey: pairs[0].0, peer: pairs[1].1.publicKey)
        }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try KeyAgreement.agree(privateKey: .ed25519(Curve25519.Signing.PrivateKey()), peer: pairs[0].1.publicKey)
        }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try KeyAgreement.agree(privateKey: pairs[0].0, peer: pairs[0].1.publicKey, size: 0)
        }
        // A low-order X25519 peer (u = 0).
        let zero = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
        #expect(throws: CofferError.self) { try KeyAgreement.agree(privateKey: pairs[3].0, peer: .x25519(zero)) }
    }

    @Test func signaturesVerifyAndRejectDamage() throws {
        let message = pattern(1000)
        for key in SampleKeys.all where key.algorithm != "X25519" {
            let signature = try Signatures.sign(message, with: key)
            #expect(try Signatures.isValid(signature, for: message, with: key.publicKey), "\(key.algorithm)")
            #expect(try !Signatures.isValid(signature, for: pattern(999), with: key.publicKey))
            #expect(try !Signatures.isValid(signature.dropLast(), for: message, with: key.publicKey))
            #expect(try !Signatures.isValid(Data(), for: message, with: key.publicKey))
            var flipped = signature
            flipped[flipped.count / 2] ^= 1
            #expect(try !Signatures.isValid(flipped, for: message, with: key.publicKey))
        }
        let p256 = AsymmetricPrivateKey.p256(P256.Signing.PrivateKey())
        let raw = try Signatures.sign(message, with: p256, ecdsaFormat: .raw)
        #expect(raw.count == 64)
        #expect(try Signatures.isValid(raw, for: message, with: p256.publicKey))
        #expect(throws: CofferError(.invalidArgument, "")) {
            try Signatures.sign(message, with: .x25519(Curve25519.KeyAgreement.PrivateKey()))
        }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try Signatures.isValid(raw, for: message, with: p256.publicKey, rsaPadding: .pkcs1v15Insecure)
        }
        // RSA: a PKCS#1 v1.5 signature passes only when asked for.
        let v15 = try SampleKeys.rsa.signature(for: SHA256.hash(data: message), padding: .insecurePKCS1v1_5)
            .rawRepresentation
        #expect(try !Signatures.isValid(v15, for: message, with: .rsa(SampleKeys.rsa.publicKey)))
        #expect(
            try Signatures.isValid(
                v15, for: message, with: .rsa(SampleKeys.rsa.publicKey), rsaPadding: .pkcs1v15Insecure))
    }
}

@Suite struct SSHRecipientTests {
    @Test func roundTripsAndStanzaRules() throws {
        let ed = Curve25519.Signing.PrivateKey()
        let identities: [any Identity] = [
            try SSHEd25519.Identity(privateKey: ed), try SSHRSA.Identity(privateKey: SampleKeys.rsa),
        ]
        let recipients: [any Recipient] = [
            try AgeKeys.recipient(try OpenSSH.publicKeyLine(.ed25519(ed.publicKey), comment: "me@host")),
            try AgeKeys.recipient(try OpenSSH.publicKeyLine(.rsa(SampleKeys.rsa.publicKey))),
        ]
        for size in [0, chunk + 1] {
            let file = try Age.encrypt(pattern(size), to: recipients)
            for identity in identities { #expect(Array(try Age.decrypt(file, with: [identity])) == pattern(size)) }
        }
        let stanzas = try recipients.map { try $0.wrap(FileKey.random())[0] }
        #expect(stanzas[0].type == "ssh-ed25519" && stanzas[0].arguments.count == 2)
        #expect(stanzas[1].type == "ssh-rsa" && stanzas[1].arguments.count == 1 && stanzas[1].body.count == 256)
        for (identity, stanza) in zip(identities, stanzas) {
            var extra = stanza
            extra.arguments.append("AAAA")
            var badTag = stanza
            badTag.arguments[0] = "AAA"
            #expect(throws: CofferError(.malformedHeader, "")) { try identity.unwrap([extra]) }
            #expect(throws: CofferError(.malformedHeader, "")) { try identity.unwrap([badTag]) }
            var otherTag = stanza
            otherTag.arguments[0] = Base64.encodeString([0, 0, 0, 0])
            #expect(try identity.unwrap([otherTag]) == nil)
            var longBody = stanza
            longBody.body.append(0)
            #expect(throws: CofferError(.malformedHeader, "")) { try identity.unwrap([longBody]) }
            var damaged = stanza
            damaged.body[5] ^= 1
            #expect(try identity.unwrap([damaged]) == nil)
            #expect(try identity.unwrap([stanza]) != nil)
        }
        // A low-order ephemeral share is a malformed header, as for X25519.
        var lowOrder = stanzas[0]
        lowOrder.arguments[1] = Base64.encodeString([UInt8](repeating: 0, count: 32))
        #expect(throws: CofferError(.malformedHeader, "")) { try identities[0].unwrap([lowOrder]) }
        // Keys age cannot encrypt to are refused by name.
        #expect(throws: CofferError(.unsupported, "")) {
            try AgeKeys.recipient(try OpenSSH.publicKeyLine(.p256(P256.Signing.PrivateKey().publicKey)))
        }
        #expect(
            String(describing: identities[0]).contains("redacted")
                && String(describing: identities[1]).contains("redacted"))
    }
}
