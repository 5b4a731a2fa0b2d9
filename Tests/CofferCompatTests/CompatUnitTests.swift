import Coffer
import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import CofferCompat

@Suite struct SHA224Tests {
    /// FIPS 180-4 examples (NIST CSRC "SHA224.pdf") and the one-million-'a' message.
    /// Found by the `seckey` fuzz target (fuzz/regressions/seckey/): an RSA
    /// public key Coffer's key files read but swift-crypto's RSA refuses
    /// (a 4,101-bit modulus) came out as swift-crypto's error, not Coffer's.
    @Test func anRSAKeySwiftCryptoRefusesIsCoffersError() throws {
        let found = try Data(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(
                    "fuzz/regressions/seckey/rsa-4101-bit-modulus-swift-crypto-refuses"))
        let error = #expect(throws: CofferError.self) { _ = try AppleKey(fileBytes: found) }
        #expect(error?.code == .unsupported && error?.description.contains("RSA") == true)
    }

    @Test func nistExamples() {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(SHA224.hash(Array("abc".utf8))) == "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7")
        #expect(hex(SHA224.hash([UInt8]())) == "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f")
        #expect(
            hex(SHA224.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525")
        #expect(
            hex(SHA224.hash([UInt8](repeating: 0x61, count: 1_000_000)))
                == "20794655980c91d8bbb4c1ea97618a4bf03f42581948b2ee4ee7ad67")
        // Incremental updates across the 55/56/64-byte padding edges agree with one-shot hashing.
        for length in [55, 56, 63, 64, 65, 119, 120, 128] {
            let message = (0..<length).map { UInt8($0) }
            var split = SHA224()
            split.update(message.prefix(length / 3))
            split.update(message.dropFirst(length / 3))
            #expect(split.finalize() == SHA224.hash(message))
        }
    }
}

@Suite struct AppleUnitTests {
    @Test func algorithmNames() throws {
        let swift = try AppleAlgorithm("eciesEncryptionCofactorVariableIVX963SHA256AESGCM")
        #expect(swift == .ecies(cofactor: true, variableIV: true, hash: .sha256))
        #expect(try AppleAlgorithm("kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM") == swift)
        #expect(
            try AppleAlgorithm(".eciesEncryptionStandardX963SHA1AESGCM")
                == .ecies(cofactor: false, variableIV: false, hash: .sha1))
        #expect(try AppleAlgorithm("kSecKeyAlgorithmRSAEncryptionOAEPSHA256AESGCM") == .rsaOAEPAESGCM(hash: .sha256))
        #expect(
            try AppleAlgorithm("ecdhKeyExchangeCofactorX963SHA224") == .ecdhKeyExchange(cofactor: true, hash: .sha224))
        #expect(
            try AppleAlgorithm("kSecKeyAlgorithmECDHKeyExchangeStandard")
                == .ecdhKeyExchange(cofactor: false, hash: nil))
        #expect(swift.description == "eciesEncryptionCofactorVariableIVX963SHA256AESGCM")
        for bad in [
            "eciesEncryptionCofactorVariableIVX963SHA1AESGCM", "eciesEncryptionX963SHA256AESGCM",
            "rsaEncryptionOAEPSHA3AESGCM", "", "aes",
        ] {
            #expect(throws: CofferError(.invalidArgument, "")) { try AppleAlgorithm(bad) }
        }
    }

    /// Standard and Cofactor are one computation on the NIST curves: each
    /// decrypts the other's output.
    @Test func standardAndCofactorAreTheSame() throws {
        let key = AppleKey.ecPrivate(.p256(P256.Signing.PrivateKey()))
        let sealed = try AppleSecKey.encrypt(
            Data("x".utf8), to: key, algorithm: .ecies(cofactor: false, variableIV: true, hash: .sha384))
        #expect(
            try AppleSecKey.decrypt(
                sealed, with: key, algorithm: .ecies(cofactor: true, variableIV: true, hash: .sha384)) == Data("x".utf8)
        )
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try AppleSecKey.decrypt(
                sealed, with: key, algorithm: .ecies(cofactor: true, variableIV: false, hash: .sha384))
        }
    }

    @Test func hostileECIES() throws {
        let key = AppleKey.ecPrivate(.p256(P256.Signing.PrivateKey()))
        let algorithm = AppleAlgorithm.ecies(cofactor: true, variableIV: false, hash: .sha256)
        let sealed = try AppleSecKey.encrypt(Data(repeating: 7, count: 100), to: key, algorithm: algorithm)
        #expect(sealed.count == 65 + 100 + 16)
        // Short, truncated, off-curve ephemeral key, compressed point, wrong tag.
        #expect(throws: CofferError(.malformed, "")) {
            try AppleSecKey.decrypt(sealed.prefix(80), with: key, algorithm: algorithm)
        }
        var offCurve = sealed
        offCurve[64] ^= 1
        #expect(throws: CofferError(.malformed, "")) {
            try AppleSecKey.decrypt(offCurve, with: key, algorithm: algorithm)
        }
        var compressed = sealed
        compressed[0] = 0x02
        #expect(throws: CofferError(.malformed, "")) {
            try AppleSecKey.decrypt(compressed, with: key, algorithm: algorithm)
        }
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try AppleSecKey.decrypt(sealed.dropLast(), with: key, algorithm: algorithm)
        }
        var tag = sealed
        tag[tag.count - 1] ^= 1
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try AppleSecKey.decrypt(tag, with: key, algorithm: algorithm)
        }
        // A P-384 key on a P-256 ciphertext, an RSA algorithm on an EC key, a public key to decrypt.
        let p384 = AppleKey.ecPrivate(.p384(P384.Signing.PrivateKey()))
        #expect(throws: CofferError.self) { try AppleSecKey.decrypt(sealed, with: p384, algorithm: algorithm) }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try AppleSecKey.decrypt(sealed, with: key, algorithm: .rsaOAEPAESGCM(hash: .sha256))
        }
        guard case .ecPrivate(let privateKey) = key else { return }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try AppleSecKey.decrypt(sealed, with: .ecPublic(privateKey.publicKey), algorithm: algorithm)
        }
    }

    @Test func keyFilesInEveryForm() throws {
        let key = P256.Signing.PrivateKey()
        let external = Array(key.x963Representation)
        for form in [
            external, Array(Data(external).base64EncodedString().utf8), Array(key.pemRepresentation.utf8),
            Array(key.derRepresentation),
        ] {
            guard case .ecPrivate(let loaded) = try AppleKey(fileBytes: form) else {
                Issue.record("not a private key")
                continue
            }
            #expect(loaded.algorithm == "P-256")
        }
        guard case .ecPublic = try AppleKey(fileBytes: Array(key.publicKey.x963Representation)) else {
            Issue.record("not a public key")
            return
        }
        #expect(throws: CofferError.self) { try AppleKey(fileBytes: [UInt8](repeating: 4, count: 65)) }
        #expect(throws: CofferError(.unsupported, "")) { try AppleKey(fileBytes: [UInt8](repeating: 4, count: 73)) }
        #expect(String(describing: try AppleKey(fileBytes: external)).contains("redacted"))
    }

    @Test func keyExchangeMatchesSHA224AndTheAgreementCode() throws {
        let a = AppleKey.ecPrivate(.p256(P256.Signing.PrivateKey()))
        let b = AppleKey.ecPrivate(.p256(P256.Signing.PrivateKey()))
        for hash in AppleAlgorithm.Hash.allCases {
            let algorithm = AppleAlgorithm.ecdhKeyExchange(cofactor: true, hash: hash)
            let ab = try AppleSecKey.keyExchange(
                privateKey: a, publicKey: b, algorithm: algorithm, size: 57, sharedInfo: [1, 2, 3])
            let ba = try AppleSecKey.keyExchange(
                privateKey: b, publicKey: a, algorithm: algorithm, size: 57, sharedInfo: [1, 2, 3])
            #expect(ab == ba && ab.count == 57)
            // Coffer's own X9.63 agrees with swift-crypto's where both exist.
            if hash != .sha224 {
                guard case .ecPrivate(let mine) = a, case .ecPrivate(let theirs) = b else { return }
                let secret = try KeyAgreement.insecureRawSharedSecret(privateKey: mine, peer: theirs.publicKey)
                #expect(X963.derive(hash, secret: secret, sharedInfo: [1, 2, 3], size: 57) == ab)
            }
        }
    }
}

@Suite struct LegacyAndCryptoKitTests {
    static let passphrase = Array("hunter2".utf8)

    static func envelope(
        _ plaintext: [UInt8], mode: LegacyRecipe.Mode, salt: [UInt8] = Array(1...8), iv: [UInt8] = Array(11...26)
    ) throws -> LegacyRecipe.Envelope {
        let key = try LegacyRecipe.key(passphrase: passphrase, salt: salt)
        let padCount = 16 - plaintext.count % 16
        var blocks = plaintext + [UInt8](repeating: UInt8(padCount), count: padCount)
        switch mode {
        case .cbc:
            blocks = Array(try AES._CBC.encrypt(blocks, using: key, iv: AES._CBC.IV(ivBytes: iv), noPadding: true))
        case .ecb:
            for start in stride(from: 0, to: blocks.count, by: 16) {
                try AES.permute(&blocks[start..<(start + 16)], key: key)
            }
        }
        return LegacyRecipe.Envelope(data: blocks, iv: iv, salt: salt)
    }

    @Test func recipeRoundTripsAndReadsEveryContainer() throws {
        for mode in LegacyRecipe.Mode.allCases {
            for size in [0, 1, 15, 16, 17, 100] {
                let plaintext = (0..<size).map { UInt8($0) }
                let envelope = try Self.envelope(plaintext, mode: mode)
                let opened = try LegacyRecipe.decrypt(envelope, passphrase: Self.passphrase, mode: mode)
                #expect(Array(opened.bytes) == plaintext && !opened.isAuthenticated)
            }
        }
        let envelope = try Self.envelope(Array("plist".utf8), mode: .cbc)
        let dictionary: [String: Any] = [
            "EncryptionData": Data(envelope.data), "EncryptionIV": Data(envelope.iv),
            "EncryptionSalt": Data(envelope.salt),
        ]
        for format in [PropertyListSerialization.PropertyListFormat.xml, .binary] {
            let bytes = try PropertyListSerialization.data(fromPropertyList: dictionary, format: format, options: 0)
            #expect(try LegacyRecipe.envelope(bytes).data == envelope.data)
        }
        let json = try JSONSerialization.data(
            withJSONObject: dictionary.mapValues { ($0 as! Data).base64EncodedString() })
        #expect(try LegacyRecipe.envelope(json).salt == envelope.salt)
    }

    @Test func hostileRecipeInput() throws {
        // Fixed key, IV and plaintext, so the outcome is fixed: the CBC data
        // decrypted as ECB ends in a block whose padding is invalid.
        let envelope = try Self.envelope([UInt8](repeating: 0x41, count: 16), mode: .cbc)
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try LegacyRecipe.decrypt(envelope, passphrase: Self.passphrase, mode: .ecb)
        }
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
            try LegacyRecipe.decrypt(envelope, passphrase: Array("wrong".utf8), mode: .cbc)
        }
        var short = envelope
        short.data.removeLast()
        #expect(throws: CofferError(.malformed, "")) {
            try LegacyRecipe.decrypt(short, passphrase: Self.passphrase, mode: .cbc)
        }
        var empty = envelope
        empty.data = []
        #expect(throws: CofferError(.malformed, "")) {
            try LegacyRecipe.decrypt(empty, passphrase: Self.passphrase, mode: .cbc)
        }
        var salt = envelope
        salt.salt = [1, 2, 3]
        #expect(throws: CofferError(.malformed, "")) {
            try LegacyRecipe.decrypt(salt, passphrase: Self.passphrase, mode: .cbc)
        }
        var iv = envelope
        iv.iv = [1]
        #expect(throws: CofferError(.malformed, "")) {
            try LegacyRecipe.decrypt(iv, passphrase: Self.passphrase, mode: .cbc)
        }
        for bad in [
            Array("not a plist".utf8),
            Array("{\"EncryptionData\": \"!!\", \"EncryptionIV\": \"\", \"EncryptionSalt\": \"\"}".utf8),
            Array("{\"EncryptionIV\": \"AAAA\"}".utf8), Array("[1, 2]".utf8), [],
        ] {
            #expect(throws: CofferError(.malformed, "")) { try LegacyRecipe.envelope(bad) }
        }
    }

    @Test func cryptoKitBoxes() throws {
        let key = [UInt8](repeating: 9, count: 32)
        for cipher in CryptoKitBox.Cipher.allCases {
            let sealed = try CryptoKitBox.seal(Data("box".utf8), key: key, cipher: cipher)
            #expect(sealed.count == 12 + 3 + 16)
            #expect(try CryptoKitBox.open(sealed, key: key, cipher: cipher) == Data("box".utf8))
            let other: CryptoKitBox.Cipher = cipher == .aesgcm ? .chachapoly : .aesgcm
            #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
                try CryptoKitBox.open(sealed, key: key, cipher: other)
            }
            var damaged = sealed
            damaged[13] ^= 1
            #expect(throws: CofferError(.payloadAuthenticationFailed, "")) {
                try CryptoKitBox.open(damaged, key: key, cipher: cipher)
            }
            #expect(throws: CofferError(.malformed, "")) {
                try CryptoKitBox.open(sealed.prefix(27), key: key, cipher: cipher)
            }
            #expect(throws: CofferError(.invalidArgument, "")) {
                try CryptoKitBox.open(sealed, key: key.dropLast(), cipher: cipher)
            }
            // Two seals of the same message never share a nonce.
            #expect(try CryptoKitBox.seal(Data("box".utf8), key: key, cipher: cipher).prefix(12) != sealed.prefix(12))
        }
    }
}

/// F7 for CofferCompat's secret holders.
@Suite struct CompatSecretDumpTests {
    @Test func F7_compatSecretHoldersAreRedacted() throws {
        let password = Array("rncryptor-password".utf8)
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        for value in [
            RNCryptor.Credentials.password(password),
            RNCryptor.Credentials.keys(encryption: SymmetricKey(size: .bits256), hmac: SymmetricKey(size: .bits256)),
            AppleKey.ecPrivate(.p256(P256.Signing.PrivateKey())),
            AppleKey.rsaPrivate(
                AppleKey.RSAKey.Private(key: try _RSA.Encryption.PrivateKey(derRepresentation: rsa.derRepresentation))),
            LegacyRecipe.UnauthenticatedPlaintext(bytes: Data(password)),
        ] as [Any] {
            var dumped = ""
            dump(value, to: &dumped)
            for text in [String(describing: value), String(reflecting: value), "\(value)", dumped] {
                #expect(text.contains("redacted"), "\(text)")
                #expect(
                    !text.contains("rncryptor-password")
                        && !text.contains(password.map(String.init).joined(separator: ", ")), "\(text)")
            }
            #expect(Mirror(reflecting: value).children.isEmpty, "\(type(of: value))")
        }
    }
}
