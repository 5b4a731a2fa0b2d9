import Foundation
import Testing

/// Live peers for the formats iOS apps stored: an independent Python
/// reference of SecKey's ECIES and RSA-AES-GCM (on `cryptography`), PyPI's
/// `rncryptor`, and `openssl enc` for the CommonCrypto recipe.
@Suite struct CompatInteropTests {
    static let appleReference = CLI.packageRoot.appendingPathComponent("Tests/CofferCLITests/Peers/apple_ref.py").path
    static let sizes = [0, 1, 16, 1037, 1 << 20]

    @discardableResult
    static func ok(_ result: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) -> CLI.Result {
        #expect(result.status == 0, "\(what) failed (\(result.status)): \(result.stderr)", sourceLocation: sourceLocation)
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
                    variants.append(("eciesEncryption\(kind)\(variableIV ? "VariableIV" : "")X963\(hash)AESGCM", hash.lowercased(), variableIV))
                }
            }
        }
        for (index, (algorithm, hash, variableIV)) in variants.enumerated() {
            let size = Self.sizes[index % Self.sizes.count]
            let input = try directory.write("in", pattern(size))
            Self.ok(try CLI.coffer(["apple", "encrypt", "--algorithm", algorithm, "--key", publicKey, "-o", directory.path("c1"), input]), "coffer encrypt \(algorithm)")
            Self.ok(try CLI.run(Peers.python!, [Self.appleReference, "ecies-decrypt", privateKey, hash, variableIV ? "1" : "0", directory.path("c1"), directory.path("p1")]), "reference decrypt \(algorithm)")
            #expect(try directory.read("p1") == pattern(size), "\(curve) \(algorithm) \(size)")
            Self.ok(try CLI.run(Peers.python!, [Self.appleReference, "ecies-encrypt", publicKey, hash, variableIV ? "1" : "0", input, directory.path("c2")]), "reference encrypt \(algorithm)")
            Self.ok(try CLI.coffer(["apple", "decrypt", "--algorithm", "kSecKeyAlgorithmECIES" + algorithm.dropFirst(5), "--key", privateKey, "-o", directory.path("p2"), directory.path("c2")]), "coffer decrypt \(algorithm)")
            #expect(try directory.read("p2") == pattern(size), "\(curve) \(algorithm) \(size)")
        }
    }

    @Test(arguments: [2048, 4096])
    func rsaAESGCMWithPythonReference(bits: Int) throws {
        guard Peers.available([("python3 with cryptography", Peers.python)]) else { return }
        let directory = try TemporaryDirectory()
        let (privateKey, publicKey) = (directory.path("rsa.private"), directory.path("rsa.public"))
        Self.ok(try CLI.run(Peers.python!, [Self.appleReference, "keygen-rsa", "\(bits)", privateKey, publicKey]), "keygen")
        for (index, hash) in ["SHA1", "SHA256"].enumerated() {
            for size in Self.sizes where bits == 2048 || size == Self.sizes[index] || size == 1037 {
                let algorithm = "rsaEncryptionOAEP\(hash)AESGCM"
                let input = try directory.write("in", pattern(size))
                Self.ok(try CLI.coffer(["apple", "encrypt", "--algorithm", algorithm, "--key", publicKey, "-o", directory.path("c1"), input]), "coffer encrypt")
                #expect(try directory.read("c1").count == bits / 8 + size + 16)
                Self.ok(try CLI.run(Peers.python!, [Self.appleReference, "rsa-decrypt", privateKey, hash.lowercased(), directory.path("c1"), directory.path("p1")]), "reference decrypt")
                #expect(try directory.read("p1") == pattern(size))
                Self.ok(try CLI.run(Peers.python!, [Self.appleReference, "rsa-encrypt", publicKey, hash.lowercased(), input, directory.path("c2")]), "reference encrypt")
                Self.ok(try CLI.coffer(["apple", "decrypt", "--algorithm", algorithm, "--key", privateKey, "-o", directory.path("p2"), directory.path("c2")]), "coffer decrypt")
                #expect(try directory.read("p2") == pattern(size))
            }
        }
        // The hashes swift-crypto's OAEP lacks are refused, by name.
        let input = try directory.write("in", pattern(10))
        let refused = try CLI.coffer(["apple", "encrypt", "--algorithm", "rsaEncryptionOAEPSHA384AESGCM", "--key", publicKey, "-o", directory.path("x"), input])
        #expect(refused.status == 5 && refused.stderr.contains("SHA-1 and SHA-256"))
    }
}
