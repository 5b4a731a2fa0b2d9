#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import Testing

/// G2 (security review 3): the key server reaches PostgreSQL through the
/// record store's TLS code, with the same `sslmode`/`sslrootcert` rules.
/// scripts/with-postgres starts the cluster with ssl=on and a certificate
/// for `localhost` signed by a CA of its own; a second CA is the wrong one.
@Suite struct PostgresTLSServerTests {
    static let environment = ProcessInfo.processInfo.environment
    static let repro = Issuer.root + "/../shared/reviews/repro/g2_pg_no_tls.py"

    static func url(host: String = "localhost", _ query: String) throws -> String {
        let port = try #require(environment["COFFER_TEST_POSTGRES_PORT"], "run under scripts/with-postgres")
        return "postgres://coffer@\(host):\(port)/coffer?schema=ks_tls&\(query)"
    }

    @Test func verifyFullWithTheClusterCA() async throws {
        let ca = try #require(Self.environment["COFFER_TEST_POSTGRES_CA"])
        let store = try await ServerKeyStore.open(
            postgres: try Self.url("sslmode=verify-full&sslrootcert=\(ca)"),
            password: try TestPostgres.server().password, kek: KeyRing())
        await store.close()
    }

    /// Another CA's certificate, and the right one reached by an address
    /// it does not name, are refused at once with the reason, not after
    /// the pool's deadline as an unreachable database.
    @Test(arguments: [("localhost", true), ("127.0.0.1", false)])
    func aWrongCertificateIsRefusedWithItsReason(host: String, otherCA: Bool) async throws {
        let ca = try #require(Self.environment[otherCA ? "COFFER_TEST_POSTGRES_OTHER_CA" : "COFFER_TEST_POSTGRES_CA"])
        let start = Date()
        let error = await #expect(throws: CofferError.self) {
            _ = try await ServerKeyStore.open(
                postgres: try Self.url(host: host, "sslmode=verify-full&sslrootcert=\(ca)"),
                password: try TestPostgres.server().password, kek: KeyRing(), deadline: .seconds(10))
        }
        #expect(error.map { "\($0)".contains("certificate was refused") } == true, "\(String(describing: error))")
        #expect(Date().timeIntervalSince(start) < 5)
    }

    /// The review's stand-in server asks for the password in the clear to
    /// anyone who connects without TLS: the key server asks for TLS first,
    /// by default on loopback too, and never sends the password.
    @Test(arguments: ["", "sslmode=require"]) func theReviewsStandInNeverSeesThePassword(query: String) async throws {
        let port = Int.random(in: 20_000..<40_000)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.repro, "\(port)"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // The stand-in accepts one connection: give it time to bind, then connect once.
        try await Task.sleep(for: .milliseconds(1500))
        let error = await #expect(throws: CofferError.self) {
            _ = try await ServerKeyStore.open(
                postgres: "postgres://app@127.0.0.1:\(port)/db?\(query)", password: "never-in-the-clear",
                kek: KeyRing(), deadline: .seconds(2))
        }
        process.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(text.contains("client sent SSLRequest"), "\(text)")
        #expect(!text.contains("never-in-the-clear") && !text.contains("StartupMessage"), "\(text)")
        #expect(error.map { !"\($0)".contains("never-in-the-clear") } == true)
    }
}
#endif
