import Foundation
import Testing

/// The public-key issue's interop matrix, both directions, against real
/// peers: OpenSSH's ssh-keygen with the age CLI (ssh-ed25519, ssh-rsa), the
/// openssl CLI (RSA-OAEP, ECDSA, RSA-PSS, Ed25519, key conversions) and
/// Python's cryptography (ECDH with X9.63, ML-DSA-65).
@Suite struct PublicKeyInteropTests {
    static let script = CLI.packageRoot.appendingPathComponent("Tests/CofferCLITests/Peers/crypto_peer.py").path

    static func ready(_ needed: [(String, String?)]) -> Bool { Peers.available(needed) }

    @discardableResult
    static func ok(_ result: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation)
        -> CLI.Result
    {
        #expect(
            result.status == 0, "\(what) failed (\(result.status)): \(result.stderr)", sourceLocation: sourceLocation)
        return result
    }

    /// age creates its output file only when it writes a byte.
    static func readOutput(_ directory: TemporaryDirectory, _ name: String) throws -> [UInt8] {
        directory.exists(name) ? try directory.read(name) : []
    }

    static func text(_ result: CLI.Result) -> String {
        result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: age with SSH keys

    /// ssh-keygen makes the key; age and coffer encrypt to its public line
    /// and decrypt with its OpenSSH private key file, each reading the other's output.
    @Test(arguments: ["ed25519", "rsa"])
    func sshKeysFromSSHKeygen(type: String) throws {
        guard Self.ready([("ssh-keygen", Peers.sshKeygen), ("age", Peers.age)]) else { return }
        let directory = try TemporaryDirectory()
        let key = directory.path("id")
        Self.ok(
            try CLI.run(
                Peers.sshKeygen!,
                ["-q", "-t", type] + (type == "rsa" ? ["-b", "3072"] : []) + ["-N", "", "-C", "test", "-f", key]),
            "ssh-keygen")
        for size in [0, 65537] {
            let input = try directory.write("in", pattern(size))
            Self.ok(try CLI.run(Peers.age!, ["-R", key + ".pub", "-o", directory.path("a.age"), input]), "age -R")
            Self.ok(
                try CLI.coffer(["decrypt", "-i", key, "-o", directory.path("a.out"), directory.path("a.age")]),
                "coffer decrypting age's file")
            #expect(try directory.read("a.out") == pattern(size))
            Self.ok(try CLI.coffer(["encrypt", "-R", key + ".pub", "-o", directory.path("c.age"), input]), "coffer -R")
            Self.ok(
                try CLI.run(Peers.age!, ["-d", "-i", key, "-o", directory.path("c.out"), directory.path("c.age")]),
                "age decrypting coffer's file")
            #expect(try Self.readOutput(directory, "c.out") == pattern(size))
        }
        // The recipient given inline with -r, too.
        let line = String(decoding: try directory.read("id.pub"), as: UTF8.self).trimmingCharacters(
            in: .whitespacesAndNewlines)
        let input = try directory.write("in", pattern(100))
        Self.ok(try CLI.coffer(["encrypt", "-r", line, "-o", directory.path("r.age"), input]), "coffer -r ssh line")
        Self.ok(
            try CLI.run(Peers.age!, ["-d", "-i", key, "-o", directory.path("r.out"), directory.path("r.age")]), "age -d"
        )
        #expect(try directory.read("r.out") == pattern(100))
    }

    /// coffer makes the key; ssh-keygen derives the same public key from
    /// it, and age uses coffer's private key file as an identity.
    @Test(arguments: ["ed25519", "rsa2048"])
    func cofferKeysWorkWithSSHKeygenAndAge(type: String) throws {
        guard Self.ready([("ssh-keygen", Peers.sshKeygen), ("age", Peers.age)]) else { return }
        let directory = try TemporaryDirectory()
        let key = directory.path("key")
        Self.ok(try CLI.coffer(["keygen", "--type", type, "-o", key]), "coffer keygen")
        let mode = try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let ours = Self.text(try CLI.coffer(["keygen", "-y", key]))
        let theirs = Self.text(Self.ok(try CLI.run(Peers.sshKeygen!, ["-y", "-f", key]), "ssh-keygen -y"))
        #expect(ours.split(separator: " ").prefix(2) == theirs.split(separator: " ").prefix(2))
        let recipients = try directory.write("recipients", Array((ours + "\n").utf8))
        let input = try directory.write("in", pattern(70000))
        Self.ok(try CLI.run(Peers.age!, ["-R", recipients, "-o", directory.path("a.age"), input]), "age -R")
        Self.ok(
            try CLI.coffer(["decrypt", "-i", key, "-o", directory.path("a.out"), directory.path("a.age")]),
            "coffer decrypt")
        #expect(try directory.read("a.out") == pattern(70000))
        Self.ok(try CLI.coffer(["encrypt", "-R", recipients, "-o", directory.path("c.age"), input]), "coffer encrypt")
        Self.ok(
            try CLI.run(Peers.age!, ["-d", "-i", key, "-o", directory.path("c.out"), directory.path("c.age")]),
            "age -d -i coffer's key")
        #expect(try directory.read("c.out") == pattern(70000))
    }

    @Test func passphraseProtectedSSHKeysAreRefusedClearly() throws {
        guard Self.ready([("ssh-keygen", Peers.sshKeygen)]) else { return }
        let directory = try TemporaryDirectory()
        let key = directory.path("id")
        Self.ok(try CLI.run(Peers.sshKeygen!, ["-q", "-t", "ed25519", "-N", "a passphrase", "-f", key]), "ssh-keygen")
        let input = try directory.write("in", pattern(10))
        Self.ok(
            try CLI.coffer(["encrypt", "-R", key + ".pub", "-o", directory.path("c.age"), input]), "coffer encrypt")
        let result = try CLI.coffer(["decrypt", "-i", key, directory.path("c.age")])
        #expect(result.status == 5)
        #expect(result.stderr.contains("protected with a passphrase") && result.stderr.contains("ssh-keygen -p"))
    }

    // MARK: openssl

    static func opensslRSAKey(_ directory: TemporaryDirectory, bits: Int = 2048) throws -> (String, String) {
        let key = directory.path("rsa.pem")
        let pub = directory.path("rsa.pub")
        Self.ok(
            try CLI.run(
                Peers.openssl!, ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\(bits)", "-out", key]),
            "openssl genpkey")
        Self.ok(try CLI.run(Peers.openssl!, ["pkey", "-in", key, "-pubout", "-out", pub]), "openssl pkey -pubout")
        return (key, pub)
    }

    @Test(arguments: ["sha256", "sha1"])
    func rsaOAEPWithOpenSSL(hash: String) throws {
        guard Self.ready([("openssl", Peers.openssl)]) else { return }
        let directory = try TemporaryDirectory()
        let (key, pub) = try Self.opensslRSAKey(directory)
        let options = [
            "-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:\(hash)", "-pkeyopt", "rsa_mgf1_md:\(hash)",
        ]
        let limit = 256 - 2 * (hash == "sha256" ? 32 : 20) - 2
        for size in [0, 16, limit] {
            let message = try directory.write("m", pattern(size))
            Self.ok(
                try CLI.coffer(["rsa", "encrypt", "-k", pub, "--hash", hash, "-o", directory.path("c1"), message]),
                "coffer rsa encrypt")
            Self.ok(
                try CLI.run(
                    Peers.openssl!,
                    ["pkeyutl", "-decrypt", "-inkey", key, "-in", directory.path("c1"), "-out", directory.path("p1")]
                        + options), "openssl decrypt")
            #expect(try directory.read("p1") == pattern(size))
            Self.ok(
                try CLI.run(
                    Peers.openssl!,
                    ["pkeyutl", "-encrypt", "-pubin", "-inkey", pub, "-in", message, "-out", directory.path("c2")]
                        + options), "openssl encrypt")
            Self.ok(
                try CLI.coffer([
                    "rsa", "decrypt", "-k", key, "--hash", hash, "-o", directory.path("p2"), directory.path("c2"),
                ]), "coffer rsa decrypt")
            #expect(try directory.read("p2") == pattern(size))
        }
        // One byte over the limit: a clear error naming it.
        let long = try directory.write("long", pattern(limit + 1))
        let refused = try CLI.coffer(["rsa", "encrypt", "-k", pub, "--hash", hash, "-o", directory.path("x"), long])
        #expect(refused.status == 64 && refused.stderr.contains("at most \(limit) bytes"))
        // The wrong hash fails as an integrity error, not with garbage.
        let other = hash == "sha256" ? "sha1" : "sha256"
        #expect(try CLI.coffer(["rsa", "decrypt", "-k", key, "--hash", other, directory.path("c2")]).status == 3)
    }

    /// coffer signs, openssl verifies; openssl signs, coffer verifies.
    @Test(arguments: ["ed25519", "p256", "p384", "rsa"])
    func signaturesWithOpenSSL(kind: String) throws {
        guard Self.ready([("openssl", Peers.openssl)]) else { return }
        let directory = try TemporaryDirectory()
        let key = directory.path("key.pem")
        let pub = directory.path("key.pub")
        let generate: [String] =
            switch kind {
            case "ed25519": ["genpkey", "-algorithm", "ed25519", "-out", key]
            case "p256": ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key]
            case "p384": ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", key]
            default: ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key]
            }
        Self.ok(try CLI.run(Peers.openssl!, generate), "openssl genpkey")
        Self.ok(try CLI.run(Peers.openssl!, ["pkey", "-in", key, "-pubout", "-out", pub]), "openssl pkey")
        let message = try directory.write("m", pattern(5000))
        let digest = kind == "p384" ? "-sha384" : "-sha256"
        let pss = kind == "rsa" ? ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32"] : []
        Self.ok(try CLI.coffer(["sign", "-k", key, "-o", directory.path("s1"), message]), "coffer sign")
        if kind == "ed25519" {
            Self.ok(
                try CLI.run(
                    Peers.openssl!,
                    [
                        "pkeyutl", "-verify", "-pubin", "-inkey", pub, "-rawin", "-in", message, "-sigfile",
                        directory.path("s1"),
                    ]), "openssl verify")
            Self.ok(
                try CLI.run(
                    Peers.openssl!,
                    ["pkeyutl", "-sign", "-inkey", key, "-rawin", "-in", message, "-out", directory.path("s2")]),
                "openssl sign")
        } else {
            Self.ok(
                try CLI.run(
                    Peers.openssl!,
                    ["dgst", digest] + pss + ["-verify", pub, "-signature", directory.path("s1"), message]),
                "openssl verify")
            Self.ok(
                try CLI.run(
                    Peers.openssl!, ["dgst", digest, "-sign", key] + pss + ["-out", directory.path("s2"), message]),
                "openssl sign")
        }
        Self.ok(try CLI.coffer(["verify", "-k", pub, "-s", directory.path("s2"), message]), "coffer verify")
        // A changed message, and a truncated signature, do not verify (status 3).
        let other = try directory.write("m2", pattern(5001))
        #expect(try CLI.coffer(["verify", "-k", pub, "-s", directory.path("s2"), other]).status == 3)
        let signature = try directory.read("s2")
        let truncated = try directory.write("short", Array(signature.dropLast()))
        #expect(try CLI.coffer(["verify", "-k", pub, "-s", truncated, message]).status == 3)
        if kind.hasPrefix("p") {
            // The raw r ‖ s form verifies too.
            Self.ok(
                try CLI.coffer(["sign", "-k", key, "--format", "raw", "-o", directory.path("raw"), message]),
                "coffer sign raw")
            #expect(try directory.read("raw").count == (kind == "p256" ? 64 : 96))
            Self.ok(try CLI.coffer(["verify", "-k", pub, "-s", directory.path("raw"), message]), "coffer verify raw")
        }
        if kind == "rsa" {
            // PKCS#1 v1.5 only when named, and only for verifying.
            Self.ok(
                try CLI.run(Peers.openssl!, ["dgst", "-sha256", "-sign", key, "-out", directory.path("v15"), message]),
                "openssl sign v1.5")
            #expect(try CLI.coffer(["verify", "-k", pub, "-s", directory.path("v15"), message]).status == 3)
            Self.ok(
                try CLI.coffer([
                    "verify", "--rsa-padding", "pkcs1v15-insecure", "-k", pub, "-s", directory.path("v15"), message,
                ]), "coffer verify v1.5")
        }
    }

    /// Keys convert back and forth: coffer's output read by openssl and
    /// ssh-keygen, theirs read by coffer, the public key unchanged throughout.
    @Test func keyFileConversions() throws {
        guard Self.ready([("openssl", Peers.openssl), ("ssh-keygen", Peers.sshKeygen)]) else { return }
        let directory = try TemporaryDirectory()
        let (rsaKey, rsaPub) = try Self.opensslRSAKey(directory)
        let spki = String(decoding: try directory.read("rsa.pub"), as: UTF8.self)
        // PKCS#8 → PKCS#1 (coffer) → openssl rsa reads it → same public key.
        Self.ok(
            try CLI.coffer(["key", "convert", "--to", "pkcs1", "-o", directory.path("rsa1.pem"), rsaKey]), "to pkcs1")
        #expect(
            String(decoding: try directory.read("rsa1.pem"), as: UTF8.self).hasPrefix("-----BEGIN RSA PRIVATE KEY-----")
        )
        #expect(
            Self.text(
                Self.ok(
                    try CLI.run(Peers.openssl!, ["rsa", "-in", directory.path("rsa1.pem"), "-pubout"]), "openssl rsa"))
                == spki.trimmingCharacters(in: .whitespacesAndNewlines))
        // openssl's DER PKCS#1 and SPKI read by coffer.
        Self.ok(
            try CLI.run(
                Peers.openssl!,
                ["rsa", "-in", rsaKey, "-traditional", "-outform", "DER", "-out", directory.path("rsa1.der")]),
            "openssl rsa -outform DER")
        #expect(
            Self.text(try CLI.coffer(["key", "convert", "--to", "spki", "--public", directory.path("rsa1.der")]))
                == spki.trimmingCharacters(in: .whitespacesAndNewlines))
        // SPKI → OpenSSH line (coffer) equals ssh-keygen -i; OpenSSH → SPKI equals ssh-keygen -e.
        let sshFromSSHKeygen = Self.text(
            Self.ok(try CLI.run(Peers.sshKeygen!, ["-i", "-m", "PKCS8", "-f", rsaPub]), "ssh-keygen -i"))
        let sshFromCoffer = Self.text(
            Self.ok(try CLI.coffer(["key", "convert", "--to", "openssh", rsaPub]), "to openssh"))
        #expect(sshFromCoffer == sshFromSSHKeygen)
        let sshLine = try directory.write("rsa.ssh", Array((sshFromCoffer + "\n").utf8))
        let backToSPKI = Self.text(
            Self.ok(try CLI.coffer(["key", "convert", "--to", "spki", sshLine]), "openssh to spki"))
        #expect(
            backToSPKI
                == Self.text(
                    Self.ok(try CLI.run(Peers.sshKeygen!, ["-e", "-m", "PKCS8", "-f", sshLine]), "ssh-keygen -e")))
        // EC: SEC 1 and Apple's external representation round trip; openssl ec reads coffer's SEC 1.
        let ecKey = directory.path("ec.pem")
        Self.ok(
            try CLI.run(
                Peers.openssl!, ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", ecKey]),
            "openssl genpkey EC")
        let ecSPKI = Self.text(Self.ok(try CLI.run(Peers.openssl!, ["pkey", "-in", ecKey, "-pubout"]), "openssl pkey"))
        Self.ok(try CLI.coffer(["key", "convert", "--to", "sec1", "-o", directory.path("ec1.pem"), ecKey]), "to sec1")
        #expect(
            Self.text(
                Self.ok(try CLI.run(Peers.openssl!, ["ec", "-in", directory.path("ec1.pem"), "-pubout"]), "openssl ec"))
                == ecSPKI)
        Self.ok(
            try CLI.coffer(["key", "convert", "--to", "apple", "-o", directory.path("ec.apple"), ecKey]), "to apple")
        #expect(try directory.read("ec.apple").count == 97)
        #expect(
            Self.text(try CLI.coffer(["key", "convert", "--to", "spki", "--public", directory.path("ec.apple")]))
                == ecSPKI)
        Self.ok(
            try CLI.coffer([
                "key", "convert", "--to", "pkcs8", "--der", "-o", directory.path("ec.der"), directory.path("ec.apple"),
            ]), "apple to pkcs8 der")
        #expect(
            Self.text(
                Self.ok(
                    try CLI.run(
                        Peers.openssl!, ["pkey", "-inform", "DER", "-in", directory.path("ec.der"), "-pubout"]),
                    "openssl reads DER")) == ecSPKI)
        // Ed25519 PKCS#8 → OpenSSH private key → ssh-keygen reads it.
        let edKey = directory.path("ed.pem")
        Self.ok(
            try CLI.run(Peers.openssl!, ["genpkey", "-algorithm", "ed25519", "-out", edKey]), "openssl genpkey ed25519")
        Self.ok(
            try CLI.coffer(["key", "convert", "--to", "openssh", "-o", directory.path("ed.ssh"), edKey]),
            "to openssh private")
        let fromSSH = Self.text(
            Self.ok(try CLI.run(Peers.sshKeygen!, ["-y", "-f", directory.path("ed.ssh")]), "ssh-keygen -y"))
        #expect(fromSSH.hasPrefix(Self.text(try CLI.coffer(["key", "convert", "--to", "openssh", "--public", edKey]))))
    }

    // MARK: Python cryptography

    /// ECDH + ANSI X9.63 KDF against cryptography's X963KDF, at sizes 16, 32
    /// and 273, with and without shared info, on each curve.
    @Test(arguments: ["P-256", "P-384", "P-521", "X25519"])
    func keyAgreementWithCryptography(curve: String) throws {
        guard Self.ready([("openssl", Peers.openssl), ("python3 with cryptography", Peers.python)]) else { return }
        let directory = try TemporaryDirectory()
        var files: [String] = []
        for side in ["a", "b"] {
            let key = directory.path("\(side).pem")
            let generate =
                curve == "X25519"
                ? ["genpkey", "-algorithm", "X25519", "-out", key]
                : ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(curve)", "-out", key]
            Self.ok(try CLI.run(Peers.openssl!, generate), "openssl genpkey")
            Self.ok(
                try CLI.run(Peers.openssl!, ["pkey", "-in", key, "-pubout", "-out", directory.path("\(side).pub")]),
                "openssl pkey")
            files.append(key)
        }
        let info = try directory.write("info", Array("coffer shared info \u{0}\u{1}".utf8))
        var cases: [(String, Int, Bool)] = []
        for size in [16, 32, 273] { for withInfo in [false, true] { cases.append(("sha256", size, withInfo)) } }
        for hash in ["sha1", "sha384", "sha512"] { cases.append((hash, 32, true)) }
        for (hash, size, withInfo) in cases {
            let ours = Self.text(
                Self.ok(
                    try CLI.coffer(
                        [
                            "agree", "--private", files[0], "--peer", directory.path("b.pub"), "--kdf", "x963-\(hash)",
                            "--size", "\(size)",
                        ]
                            + (withInfo ? ["--shared-info-file", info] : [])), "coffer agree"))
            let theirs = Self.text(
                Self.ok(
                    try CLI.run(
                        Peers.python!,
                        [Self.script, "agree", files[1], directory.path("a.pub"), hash, "\(size)"]
                            + (withInfo ? [info] : [])), "cryptography agree"))
            #expect(ours.count == 2 * size)
            #expect(ours == theirs, "\(curve) x963-\(hash) size \(size) info \(withInfo)")
        }
        // A peer on another curve is refused with a message that says so.
        let mismatch = try CLI.coffer([
            "agree", "--private", files[0], "--peer", try Self.otherCurvePeer(directory, not: curve),
        ])
        #expect(mismatch.status == 64 && mismatch.stderr.contains("same curve"))
    }

    static func otherCurvePeer(_ directory: TemporaryDirectory, not curve: String) throws -> String {
        let key = directory.path("other.pem")
        let other = curve == "P-256" ? "P-384" : "P-256"
        Self.ok(
            try CLI.run(
                Peers.openssl!, ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(other)", "-out", key]),
            "openssl genpkey")
        return key
    }

    @Test func mldsa65WithCryptography() throws {
        guard Self.ready([("python3 with cryptography", Peers.python)]) else { return }
        let directory = try TemporaryDirectory()
        let message = try directory.write("m", pattern(3000))
        // coffer's key and signature, verified by cryptography (reading coffer's PKCS#8 and SPKI).
        Self.ok(
            try CLI.coffer(["keygen", "--type", "mldsa65", "-o", directory.path("ours.pem")]), "coffer keygen mldsa65")
        try directory.write("ours.pub", Array(try CLI.coffer(["keygen", "-y", directory.path("ours.pem")]).stdout))
        Self.ok(
            try CLI.coffer(["sign", "-k", directory.path("ours.pem"), "-o", directory.path("s1"), message]),
            "coffer sign")
        #expect(try directory.read("s1").count == 3309)
        Self.ok(
            try CLI.run(
                Peers.python!, [Self.script, "mldsa-verify", directory.path("ours.pub"), message, directory.path("s1")]),
            "cryptography verify")
        // cryptography's key and signature, verified by coffer.
        Self.ok(
            try CLI.run(
                Peers.python!,
                [Self.script, "mldsa-keygen", directory.path("theirs.pem"), directory.path("theirs.pub")]),
            "cryptography keygen")
        Self.ok(
            try CLI.run(
                Peers.python!, [Self.script, "mldsa-sign", directory.path("theirs.pem"), message, directory.path("s2")]),
            "cryptography sign")
        Self.ok(
            try CLI.coffer(["verify", "-k", directory.path("theirs.pub"), "-s", directory.path("s2"), message]),
            "coffer verify")
        #expect(
            try CLI.coffer(["verify", "-k", directory.path("ours.pub"), "-s", directory.path("s2"), message]).status
                == 3)
        // Both read the same public key from cryptography's private key.
        #expect(
            Self.text(try CLI.coffer(["keygen", "-y", directory.path("theirs.pem")]))
                == String(decoding: try directory.read("theirs.pub"), as: UTF8.self).trimmingCharacters(
                    in: .whitespacesAndNewlines))
    }
}
