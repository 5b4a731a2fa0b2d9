import Foundation
import Testing

/// The independent implementations the interop tests run against: the
/// `age` CLI (Go), pyrage (rage, Rust), OpenSSH's ssh-keygen, the openssl
/// CLI and Python's cryptography (its own OpenSSL build). `.ci/run`
/// installs them all.
///
/// A missing peer fails the test. Only outside CI, and only when
/// COFFER_SKIP_INTEROP=1 is set on purpose, are interop tests skipped, and
/// they say so.
enum Peers {
    static let environment = ProcessInfo.processInfo.environment

    static func which(_ name: String) -> String? {
        for directory in (environment["PATH"] ?? "").split(separator: ":") {
            let path = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    static let age = which("age")
    static let ageKeygen = which("age-keygen")
    static let sshKeygen = which("ssh-keygen")
    static let openssl = which("openssl")
    static let python: String? = {
        let candidates = [
            environment["COFFER_PYTHON"], CLI.packageRoot.appendingPathComponent(".venv/bin/python").path,
        ].compactMap { $0 }
        return candidates.first { path in
            FileManager.default.isExecutableFile(atPath: path)
                && (try? CLI.run(
                    path, ["-c", "import pyrage, rncryptor, cryptography.hazmat.primitives.asymmetric.mldsa"]
                ).status) == 0
        }
    }()
    static let script = CLI.packageRoot.appendingPathComponent("Tests/CofferCLITests/Peers/peer.py").path

    /// Runs crypto_peer.py (Python's cryptography) and returns its standard
    /// output; records an issue and returns nil when it is missing or fails.
    static func cryptoPeer(
        _ arguments: [String], stdin: [UInt8] = [], sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [UInt8]? {
        guard available([("python3 with cryptography", python)], sourceLocation: sourceLocation) else { return nil }
        let script = CLI.packageRoot.appendingPathComponent("Tests/CofferCLITests/Peers/crypto_peer.py").path
        let result = try CLI.run(python!, [script] + arguments, stdin: stdin)
        guard result.status == 0 else {
            Issue.record(
                Comment(rawValue: "crypto_peer.py \(arguments.first ?? "") failed: \(result.stderr)"),
                sourceLocation: sourceLocation)
            return nil
        }
        return result.stdout
    }

    static var skipAllowed: Bool { environment["CI"] != "true" && environment["COFFER_SKIP_INTEROP"] == "1" }

    /// Returns false (after saying why) when the test should not go on.
    static func available(_ needed: [(String, String?)], sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let missing = needed.filter { $0.1 == nil }.map(\.0)
        guard !missing.isEmpty else { return true }
        let message =
            "interop peer missing: \(missing.joined(separator: ", ")); run scripts/test (or .ci/run) to install it"
        if skipAllowed {
            print("SKIPPED (COFFER_SKIP_INTEROP=1): \(message)")
        } else {
            Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
        }
        return false
    }
}
