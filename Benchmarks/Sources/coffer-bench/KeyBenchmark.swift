#if canImport(Glibc)
import Coffer
import Crypto
import CryptoExtras
import Foundation
import Glibc

/// `coffer-bench keys [--seconds N]`: public-key operations per second,
/// three ways in one run: through Coffer's API (keys prepared once, as a
/// caller holding a key would), through swift-crypto directly in a tight
/// loop, and `openssl speed` (its RSA sign/verify stand in for OAEP
/// decrypt/encrypt: both are dominated by the private and public
/// exponentiation). Single-threaded throughout.
enum KeyBenchmark {
    struct Row {
        let name: String
        let coffer: Double
        let swiftCrypto: Double
        let openssl: Double?

        init(name: String, rates: (Double, Double), openssl: Double?) {
            self.name = name
            (coffer, swiftCrypto) = rates
            self.openssl = openssl
        }
    }

    /// The best of six alternating measurements (the order flips each round) of each body, so that a
    /// slow moment of the machine does not land on one side only.
    static func compare(_ seconds: Double, _ coffer: () throws -> Void, _ swiftCrypto: () throws -> Void) rethrows -> (
        Double, Double
    ) {
        var best = (0.0, 0.0)
        for round in 0..<6 {
            if round % 2 == 0 {
                best.0 = max(best.0, try rate(seconds / 6, coffer))
                best.1 = max(best.1, try rate(seconds / 6, swiftCrypto))
            } else {
                best.1 = max(best.1, try rate(seconds / 6, swiftCrypto))
                best.0 = max(best.0, try rate(seconds / 6, coffer))
            }
        }
        return best
    }

    static func padded(_ text: String, _ width: Int, left: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return left ? text + padding : padding + text
    }

    /// Operations per second of `body`, run for about `seconds`.
    static func rate(_ seconds: Double, _ body: () throws -> Void) rethrows -> Double {
        for _ in 0..<20 { try body() }  // warm up
        var count = 0
        let start = DispatchTime.now().uptimeNanoseconds
        var elapsed = 0.0
        repeat {
            for _ in 0..<16 { try body() }
            count += 16
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        } while elapsed < seconds
        return Double(count) / elapsed
    }

    static func opensslSpeed(seconds: Int) -> [String: (Double, Double)] {
        guard let openssl = Benchmark.which("openssl") else { return [:] }
        let pipe = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = ["speed", "-mr", "-seconds", "\(seconds)", "rsa2048", "ecdhp256", "ed25519", "ecdsap256"]
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return [:] }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        var results: [String: (Double, Double)] = [:]
        for line in output.split(separator: "\n") where line.hasPrefix("+F") {
            let fields = line.split(separator: ":").map(String.init)
            switch fields[0] {
            case "+F2" where fields[2] == "2048": results["rsa"] = (Double(fields[3]) ?? 0, Double(fields[4]) ?? 0)
            case "+F4" where fields[2] == "256": results["ecdsa"] = (Double(fields[3]) ?? 0, Double(fields[4]) ?? 0)
            case "+F5" where fields[2] == "256": results["ecdh"] = (Double(fields[3]) ?? 0, 0)
            case "+F6" where fields[3] == "Ed25519":
                results["ed25519"] = (Double(fields[4]) ?? 0, Double(fields[5]) ?? 0)
            default: break
            }
        }
        return results
    }

    static func run(seconds: Double) throws {
        print("coffer-bench keys: ops/s, single thread, \(seconds) s per measurement")
        let message = Data(repeating: 0x5a, count: 32)
        let signed = Data(repeating: 0xa5, count: 256)

        // RSA-2048 OAEP-SHA-256
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let rsaPrivate = AsymmetricPrivateKey.rsa(rsa)
        let encryptor = try RSAEncryption.Encryptor(publicKey: rsaPrivate.publicKey)
        let decryptor = try RSAEncryption.Decryptor(privateKey: rsaPrivate)
        let rawPublic = try _RSA.Encryption.PublicKey(derRepresentation: rsa.publicKey.derRepresentation)
        let rawPrivate = try _RSA.Encryption.PrivateKey(derRepresentation: rsa.derRepresentation)
        let ciphertext = try encryptor.encrypt(message)

        // P-256 ECDH + X9.63, Ed25519, ECDSA P-256
        let a = P256.KeyAgreement.PrivateKey()
        let b = P256.KeyAgreement.PrivateKey()
        let party = try KeyAgreement.Party(
            privateKey: .p256(try P256.Signing.PrivateKey(rawRepresentation: a.rawRepresentation)))
        let peer = try KeyAgreement.Peer(
            publicKey: .p256(try P256.Signing.PublicKey(rawRepresentation: b.publicKey.rawRepresentation)))
        let ed = Curve25519.Signing.PrivateKey()
        let edKey = AsymmetricPrivateKey.ed25519(ed)
        let edPublic = edKey.publicKey
        let edSignature = try ed.signature(for: signed)
        let ecdsa = P256.Signing.PrivateKey()
        let ecdsaKey = AsymmetricPrivateKey.p256(ecdsa)
        let ecdsaPublic = ecdsaKey.publicKey
        let ecdsaSignature = try Signatures.sign(signed, with: ecdsaKey)

        let openssl = opensslSpeed(seconds: max(1, Int(seconds.rounded())))
        var rows: [Row] = []
        rows.append(
            Row(
                name: "RSA-2048 OAEP encrypt",
                rates: try compare(
                    seconds, { _ = try encryptor.encrypt(message) },
                    { _ = try rawPublic.encrypt(message, padding: .PKCS1_OAEP_SHA256) }),
                openssl: openssl["rsa"]?.1))
        rows.append(
            Row(
                name: "RSA-2048 OAEP decrypt",
                rates: try compare(
                    seconds, { _ = try decryptor.decrypt(ciphertext) },
                    { _ = try rawPrivate.decrypt(ciphertext, padding: .PKCS1_OAEP_SHA256) }),
                openssl: openssl["rsa"]?.0))
        rows.append(
            Row(
                name: "P-256 ECDH + X9.63",
                rates: try compare(
                    seconds, { _ = try party.agree(with: peer) },
                    {
                        _ = try a.sharedSecretFromKeyAgreement(with: b.publicKey)
                            .x963DerivedSymmetricKey(using: SHA256.self, sharedInfo: Data(), outputByteCount: 32)
                    }),
                openssl: openssl["ecdh"]?.0))
        rows.append(
            Row(
                name: "Ed25519 sign",
                rates: try compare(
                    seconds, { _ = try Signatures.sign(signed, with: edKey) },
                    { _ = try ed.signature(for: signed) }),
                openssl: openssl["ed25519"]?.0))
        rows.append(
            Row(
                name: "Ed25519 verify",
                rates: try compare(
                    seconds, { _ = try Signatures.isValid(edSignature, for: signed, with: edPublic) },
                    { _ = ed.publicKey.isValidSignature(edSignature, for: signed) }),
                openssl: openssl["ed25519"]?.1))
        rows.append(
            Row(
                name: "ECDSA P-256 sign",
                rates: try compare(
                    seconds, { _ = try Signatures.sign(signed, with: ecdsaKey) },
                    { _ = try ecdsa.signature(for: signed).derRepresentation }),
                openssl: openssl["ecdsa"]?.0))
        rows.append(
            Row(
                name: "ECDSA P-256 verify",
                rates: try compare(
                    seconds, { _ = try Signatures.isValid(ecdsaSignature, for: signed, with: ecdsaPublic) },
                    {
                        // What verifying DER bytes takes: parse, then verify.
                        let parsed = try P256.Signing.ECDSASignature(derRepresentation: ecdsaSignature)
                        _ = ecdsa.publicKey.isValidSignature(parsed, for: signed)
                    }),
                openssl: openssl["ecdsa"]?.1))

        print(
            padded("operation", 24, left: true) + padded("coffer", 10) + padded("swift-crypto", 14)
                + padded("openssl", 10)
                + padded("coffer/s-c", 12) + padded("s-c/openssl", 13))
        for row in rows {
            let versusOpenSSL = row.openssl.map { String(format: "%.2f×", row.swiftCrypto / $0) } ?? "n/a"
            let opensslText = row.openssl.map { String(format: "%.0f", $0) } ?? "n/a"
            print(
                padded(row.name, 24, left: true) + padded(String(format: "%.0f", row.coffer), 10)
                    + padded(String(format: "%.0f", row.swiftCrypto), 14) + padded(opensslText, 10)
                    + padded(String(format: "%.2f×", row.coffer / row.swiftCrypto), 12) + padded(versusOpenSSL, 13))
        }
        if openssl.isEmpty { print("(openssl not found: install it for the comparison column)") }
    }
}
#endif
