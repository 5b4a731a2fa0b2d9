import Foundation
import Testing

/// Live peers for the formats iOS apps stored: an independent Python
/// reference of SecKey's ECIES and RSA-AES-GCM (on `cryptography`), PyPI's
/// `rncryptor`, and `openssl enc` for the CommonCrypto recipe.
@Suite struct CompatInteropTests {
    static let appleReference = CLI.packageRoot.appendingPathComponent("Tests/CofferCLITests/Peers/apple_ref.py").path
    static let sizes = [0, 1, 16, 1037, 1 << 20]

    @discardableResult
    static func ok(_ result: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation)
        -> CLI.Result
    {
        #expect(
            result.status == 0, "\(what) failed (\(result.status)): \(result.stderr)", sourceLocation: sourceLocation)
        return result
    }

    /// Every ECIES variant on each curve, both ways, on fresh keys; the
    /// sizes rotate through 0, 1, 16, 1037 and 1 MiB across the variants.
    @Test(arguments: ["P-256", "P-384", "P-521"])
    func eciesWithPythonReference(curve: String) throws {
        guard Peers.available([("python3 with cryptography", Peers.python)]) else { return }
        let directory = try TemporaryDirectory()
        let (privateKey, publicKey) = (directory.path("ec.private"), directory.path("ec.public"))
        Self.ok(try CLI.run(Peers.python!, [Self.appleReference, "keygen-ec", curve, privateKey, publicKey]), "keygen")
        var variants: [(String, String, Bool)] = []
        for hash in ["SHA1", "SHA224", "SHA256", "SHA384", "SHA512"] {
            for variableIV in [false, true] where !(variableIV && hash == "SHA1") {
                for kind in ["Standard", "Cofactor"] {
                    variants.append(
                        (
                            "eciesEncryption\(kind)\(variableIV ? "VariableIV" : "")X963\(hash)AESGCM",
                            hash.lowercased(), variableIV
                        ))
                }
            }
        }
        for (index, (algorithm, hash, variableIV)) in variants.enumerated() {
            let size = Self.sizes[index % Self.sizes.count]
            let input = try directory.write("in", pattern(size))
            Self.ok(
                try CLI.coffer([
                    "apple", "encrypt", "--algorithm", algorithm, "--key", publicKey, "-o", directory.path("c1"), input,
                ]), "coffer encrypt \(algorithm)")
            Self.ok(
                try CLI.run(
                    Peers.python!,
                    [
                        Self.appleReference, "ecies-decrypt", privateKey, hash, variableIV ? "1" : "0",
                        directory.path("c1"), directory.path("p1"),
                    ]), "reference decrypt \(algorithm)")
            #expect(try directory.read("p1") == pattern(size), "\(curve) \(algorithm) \(size)")
            Self.ok(
                try CLI.run(
                    Peers.python!,
                    [
                        Self.appleReference, "ecies-encrypt", publicKey, hash, variableIV ? "1" : "0", input,
                        directory.path("c2"),
                    ]), "reference encrypt \(algorithm)")
            Self.ok(
                try CLI.coffer([
                    "apple", "decrypt", "--algorithm", "kSecKeyAlgorithmECIES" + algorithm.dropFirst(5), "--key",
                    privateKey, "-o", directory.path("p2"), directory.path("c2"),
                ]), "coffer decrypt \(algorithm)")
            #expect(try directory.read("p2") == pattern(size), "\(curve) \(algorithm) \(size)")
        }
    }

    @Test(arguments: [2048, 4096])
    func rsaAESGCMWithPythonReference(bits: Int) throws {
        guard Peers.available([("python3 with cryptography", Peers.python)]) else { return }
        let directory = try TemporaryDirectory()
        let (privateKey, publicKey) = (directory.path("rsa.private"), directory.path("rsa.public"))
        Self.ok(
            try CLI.run(Peers.python!, [Self.appleReference, "keygen-rsa", "\(bits)", privateKey, publicKey]), "keygen")
        for (index, hash) in ["SHA1", "SHA256"].enumerated() {
            for size in Self.sizes where bits == 2048 || size == Self.sizes[index] || size == 1037 {
                let algorithm = "rsaEncryptionOAEP\(hash)AESGCM"
                let input = try directory.write("in", pattern(size))
                Self.ok(
                    try CLI.coffer([
                        "apple", "encrypt", "--algorithm", algorithm, "--key", publicKey, "-o", directory.path("c1"),
                        input,
                    ]), "coffer encrypt")
                #expect(try directory.read("c1").count == bits / 8 + size + 16)
                Self.ok(
                    try CLI.run(
                        Peers.python!,
                        [
                            Self.appleReference, "rsa-decrypt", privateKey, hash.lowercased(), directory.path("c1"),
                            directory.path("p1"),
                        ]), "reference decrypt")
                #expect(try directory.read("p1") == pattern(size))
                Self.ok(
                    try CLI.run(
                        Peers.python!,
                        [Self.appleReference, "rsa-encrypt", publicKey, hash.lowercased(), input, directory.path("c2")]),
                    "reference encrypt")
                Self.ok(
                    try CLI.coffer([
                        "apple", "decrypt", "--algorithm", algorithm, "--key", privateKey, "-o", directory.path("p2"),
                        directory.path("c2"),
                    ]), "coffer decrypt")
                #expect(try directory.read("p2") == pattern(size))
            }
        }
        // The hashes swift-crypto's OAEP lacks are refused, by name.
        let input = try directory.write("in", pattern(10))
        let refused = try CLI.coffer([
            "apple", "encrypt", "--algorithm", "rsaEncryptionOAEPSHA384AESGCM", "--key", publicKey, "-o",
            directory.path("x"), input,
        ])
        #expect(refused.status == 5 && refused.stderr.contains("SHA-1 and SHA-256"))
    }

    static let compatPeer = CLI.packageRoot.appendingPathComponent("Tests/CofferCLITests/Peers/compat_peer.py").path

    @Test func rncryptorWithPyPIPackage() throws {
        guard Peers.available([("python3 with rncryptor", Peers.python)]) else { return }
        let directory = try TemporaryDirectory()
        let password = try directory.write("pw", Array("correct horse battery staple\n".utf8))
        for size in Self.sizes {
            let input = try directory.write("in", pattern(size))
            Self.ok(
                try CLI.coffer([
                    "rncryptor", "encrypt", "--passphrase-file", password, "-o", directory.path("c1"), input,
                ]), "coffer encrypt")
            Self.ok(
                try CLI.run(
                    Peers.python!,
                    [Self.compatPeer, "rncryptor-decrypt", password, directory.path("c1"), directory.path("p1")]),
                "rncryptor decrypt")
            #expect(try directory.read("p1") == pattern(size), "size \(size)")
            Self.ok(
                try CLI.run(
                    Peers.python!, [Self.compatPeer, "rncryptor-encrypt", password, input, directory.path("c2")]),
                "rncryptor encrypt")
            Self.ok(
                try CLI.coffer([
                    "rncryptor", "decrypt", "--passphrase-file", password, "-o", directory.path("p2"),
                    directory.path("c2"),
                ]), "coffer decrypt")
            #expect(try directory.read("p2") == pattern(size), "size \(size)")
        }
        // A damaged message: exit 3, and no output file.
        var damaged = try directory.read("c2")
        damaged[damaged.count / 2] ^= 1
        let bad = try directory.write("bad", damaged)
        #expect(
            try CLI.coffer(["rncryptor", "decrypt", "--passphrase-file", password, "-o", directory.path("never"), bad])
                .status == 3)
        #expect(!directory.exists("never"))
    }

    /// The recipe's dictionary made by openssl enc (AES-256-CBC and -ECB)
    /// with a PBKDF2-SHA512 key from hashlib, as JSON, XML and binary plists.
    @Test(arguments: ["cbc", "ecb"])
    func legacyRecipeWithOpenSSL(mode: String) throws {
        guard Peers.available([("openssl", Peers.openssl), ("python3", Peers.python)]) else { return }
        let directory = try TemporaryDirectory()
        let password = try directory.write("pw", Array("hunter2".utf8))
        for (index, form) in ["json", "xml", "binary"].enumerated() {
            for size in [0, 1, 16, 1037, 1 << 20] where index == 0 || size == 1037 {
                let input = try directory.write("in", pattern(size))
                Self.ok(
                    try CLI.run(
                        Peers.python!,
                        [Self.compatPeer, "legacy-make", mode, password, input, directory.path("stored"), form]),
                    "legacy-make")
                let result = Self.ok(
                    try CLI.coffer([
                        "legacy", "decrypt", "--mode", mode, "--passphrase-file", password, "-o", directory.path("out"),
                        directory.path("stored"),
                    ]), "coffer legacy decrypt")
                #expect(result.stderr.contains("unauthenticated"))
                #expect(try directory.read("out") == pattern(size), "\(mode) \(form) \(size)")
            }
        }
    }

    @Test(arguments: ["aesgcm", "chachapoly"])
    func cryptokitBoxesWithPython(cipher: String) throws {
        guard Peers.available([("python3 with cryptography", Peers.python)]) else { return }
        let directory = try TemporaryDirectory()
        let key = try directory.write("key", (0..<32).map { UInt8($0 * 7 & 0xff) })
        for size in Self.sizes {
            let input = try directory.write("in", pattern(size))
            Self.ok(
                try CLI.coffer([
                    "cryptokit", "seal", "--cipher", cipher, "--key-file", key, "-o", directory.path("c1"), input,
                ]), "coffer seal")
            #expect(try directory.read("c1").count == 12 + size + 16)
            Self.ok(
                try CLI.run(
                    Peers.python!,
                    [Self.compatPeer, "cryptokit-open", cipher, key, directory.path("c1"), directory.path("p1")]),
                "python open")
            #expect(try directory.read("p1") == pattern(size))
            Self.ok(
                try CLI.run(
                    Peers.python!, [Self.compatPeer, "cryptokit-seal", cipher, key, input, directory.path("c2")]),
                "python seal")
            Self.ok(
                try CLI.coffer([
                    "cryptokit", "open", "--cipher", cipher, "--key-file", key, "-o", directory.path("p2"),
                    directory.path("c2"),
                ]), "coffer open")
            #expect(try directory.read("p2") == pattern(size))
        }
    }

    /// Each old format, made by its peer, converts to an age file that age
    /// opens; damaged old data converts to nothing.
    @Test func convertEveryFormatToAge() throws {
        guard
            Peers.available([
                ("python3 with cryptography and rncryptor", Peers.python), ("openssl", Peers.openssl),
                ("age", Peers.age),
            ])
        else { return }
        let directory = try TemporaryDirectory()
        Self.ok(try CLI.run(Peers.ageKeygen!, ["-o", directory.path("age.key")]), "age-keygen")
        let recipient = try CLI.run(Peers.ageKeygen!, ["-y", directory.path("age.key")]).stdoutText.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let input = try directory.write("in", pattern(5000))
        let password = try directory.write("pw", Array("migrate me".utf8))
        let ckKey = try directory.write("ck.key", [UInt8](repeating: 0x42, count: 32))
        Self.ok(
            try CLI.run(
                Peers.python!,
                [Self.appleReference, "keygen-ec", "P-256", directory.path("ec.private"), directory.path("ec.public")]),
            "keygen")
        Self.ok(
            try CLI.run(
                Peers.python!,
                [
                    Self.appleReference, "ecies-encrypt", directory.path("ec.public"), "sha256", "1", input,
                    directory.path("old.apple"),
                ]), "ecies")
        Self.ok(
            try CLI.run(
                Peers.python!, [Self.compatPeer, "rncryptor-encrypt", password, input, directory.path("old.rncryptor")]),
            "rncryptor")
        Self.ok(
            try CLI.run(
                Peers.python!,
                [Self.compatPeer, "legacy-make", "cbc", password, input, directory.path("old.cbc"), "xml"]),
            "legacy cbc")
        Self.ok(
            try CLI.run(
                Peers.python!,
                [Self.compatPeer, "legacy-make", "ecb", password, input, directory.path("old.ecb"), "json"]),
            "legacy ecb")
        Self.ok(
            try CLI.run(
                Peers.python!, [Self.compatPeer, "cryptokit-seal", "aesgcm", ckKey, input, directory.path("old.gcm")]),
            "gcm")
        Self.ok(
            try CLI.run(
                Peers.python!,
                [Self.compatPeer, "cryptokit-seal", "chachapoly", ckKey, input, directory.path("old.chacha")]), "chacha"
        )
        let cases: [(String, String, [String])] = [
            (
                "apple-ecies", "old.apple",
                [
                    "--algorithm", "eciesEncryptionStandardVariableIVX963SHA256AESGCM", "--key",
                    directory.path("ec.private"),
                ]
            ),
            ("rncryptor", "old.rncryptor", ["--passphrase-file", password]),
            ("legacy-cbc", "old.cbc", ["--passphrase-file", password]),
            ("legacy-ecb", "old.ecb", ["--passphrase-file", password]),
            ("cryptokit-aesgcm", "old.gcm", ["--key-file", ckKey]),
            ("cryptokit-chachapoly", "old.chacha", ["--key-file", ckKey]),
        ]
        for (format, file, credentials) in cases {
            Self.ok(
                try CLI.coffer(
                    ["convert", "--from", format] + credentials + [
                        "-r", recipient, "-o", directory.path("\(format).age"), directory.path(file),
                    ]), "convert \(format)")
            Self.ok(
                try CLI.run(
                    Peers.age!,
                    [
                        "-d", "-i", directory.path("age.key"), "-o", directory.path("\(format).out"),
                        directory.path("\(format).age"),
                    ]), "age -d \(format)")
            #expect(try directory.read("\(format).out") == pattern(5000), "\(format)")
            if !format.hasPrefix("legacy") {
                var damaged = try directory.read(file)
                damaged[damaged.count - 5] ^= 1
                let bad = try directory.write("bad", damaged)
                let result = try CLI.coffer(
                    ["convert", "--from", format] + credentials + [
                        "-r", recipient, "-o", directory.path("never.age"), bad,
                    ])
                #expect(result.status == 3, "damaged \(format): \(result.stderr)")
                #expect(!directory.exists("never.age"))
            }
        }
        // A wrong password is said as the format's own, not as AeroGear's.
        let wrong = try directory.write("wrong", Array("not it".utf8))
        let refused = try CLI.coffer([
            "convert", "--from", "rncryptor", "--passphrase-file", wrong, "-r", recipient, "-o",
            directory.path("never.age"), directory.path("old.rncryptor"),
        ])
        #expect(refused.status == 3, "\(refused.stderr)")  // RNCryptor cannot tell a wrong password from damage
        #expect(!refused.stderr.contains("AeroGear"), "\(refused.stderr)")
        #expect(!directory.exists("never.age"))
    }

    /// SecKeyCopyKeyExchangeResult's X9.63 variants, SHA-224 included,
    /// against cryptography's X963KDF.
    @Test func appleKeyExchangeWithCryptography() throws {
        guard Peers.available([("openssl", Peers.openssl), ("python3 with cryptography", Peers.python)]) else { return }
        let directory = try TemporaryDirectory()
        for side in ["a", "b"] {
            Self.ok(
                try CLI.run(
                    Peers.openssl!,
                    [
                        "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out",
                        directory.path("\(side).pem"),
                    ]), "genpkey")
            Self.ok(
                try CLI.run(
                    Peers.openssl!,
                    ["pkey", "-in", directory.path("\(side).pem"), "-pubout", "-out", directory.path("\(side).pub")]),
                "pubout")
        }
        let info = try directory.write("info", Array("shared".utf8))
        let script = CLI.packageRoot.appendingPathComponent("Tests/CofferCLITests/Peers/crypto_peer.py").path
        for hash in ["SHA1", "SHA224", "SHA256", "SHA384", "SHA512"] {
            let ours = Self.ok(
                try CLI.coffer([
                    "apple", "key-exchange", "--algorithm", "ecdhKeyExchangeCofactorX963\(hash)", "--private",
                    directory.path("a.pem"),
                    "--public", directory.path("b.pub"), "--size", "273", "--shared-info-file", info,
                ]), "coffer key-exchange"
            ).stdoutText
            let theirs = Self.ok(
                try CLI.run(
                    Peers.python!,
                    [script, "agree", directory.path("b.pem"), directory.path("a.pub"), hash.lowercased(), "273", info]),
                "cryptography"
            ).stdoutText
            #expect(ours == theirs && ours.count == 547, "\(hash)")
        }
    }

    /// Coffer's own SHA-224 against Python's hashlib, at lengths around the
    /// block and padding edges and one of 1 MiB.
    @Test func sha224AgainstHashlib() throws {
        guard Peers.available([("python3", Peers.python)]) else { return }
        let directory = try TemporaryDirectory()
        for size in [0, 1, 55, 56, 63, 64, 65, 1037, 1 << 20] {
            let input = try directory.write("in", pattern(size))
            let ours = Self.ok(try CLI.coffer(["hash", "--algorithm", "sha224", input]), "coffer hash").stdoutText
                .split(separator: " ").first.map(String.init)
            let theirs = Self.ok(
                try CLI.run(
                    Peers.python!,
                    [
                        "-c", "import hashlib,sys; print(hashlib.sha224(open(sys.argv[1],'rb').read()).hexdigest())",
                        input,
                    ]), "hashlib"
            ).stdoutText
            #expect(ours == theirs.trimmingCharacters(in: .whitespacesAndNewlines), "size \(size)")
        }
    }
}
