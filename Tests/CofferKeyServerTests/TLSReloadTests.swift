#if Server
import AsyncHTTPClient
import Coffer
import CofferKeyClient
import CofferKeyClientNIO
import Foundation
import Testing

/// SIGHUP reloads the TLS certificate (issue 59, part 5): new connections
/// get the pair in the files now; a pair that does not belong together is
/// refused with a line in the log and the server keeps presenting the old.
@Suite struct TLSReloadTests {
    /// Whether a client that trusts only `pem` gets a key from the server,
    /// on a connection of its own.
    static func reaches(_ url: String, trusting pem: String, token: String) async throws -> Bool {
        let http = try AsyncHTTPClientTransport.pinnedHTTPClient(
            trusting: try String(contentsOfFile: pem, encoding: .utf8))
        let client = try KeyServerClient(
            server: URL(string: url)!, account: "a", token: { token }, transport: AsyncHTTPClientTransport(http),
            timeout: .seconds(3))
        let reached: Bool
        do {
            _ = try await client.currentKey(purpose: "notes")
            reached = true
        } catch let error as KeyClientError where error.code == .unreachable {
            reached = false
        }
        try await http.shutdown()
        return reached
    }

    static func replace(_ path: String, with source: String) throws {
        let run = try Spawned.run("/usr/bin/install", ["-m", "600", source, path])
        guard run.status == 0 else { throw CofferError(.io, "install \(source) \(path) failed") }
    }

    @Test func sighupServesTheNewCertificateAndKeepsTheOldOneOnABadPair() async throws {
        let issuer = try Issuer()
        let first = try TLSTests.certificate(in: issuer.folder, name: "first")
        let second = try TLSTests.certificate(in: issuer.folder, name: "second")
        let (cert, key) = (issuer.folder + "/served.pem", issuer.folder + "/served-key.pem")
        try Self.replace(cert, with: first.cert)
        try Self.replace(key, with: first.key)
        let log = issuer.folder + "/server.log"
        let server = try ServerProcess(
            issuer: issuer, data: issuer.folder + "/data", log: log, extra: ["--tls-cert", cert, "--tls-key", key])
        defer { server.stop() }
        let token = try issuer.token("tls-user")
        #expect(try await Self.reaches(server.url, trusting: first.cert, token: token))
        #expect(try await !Self.reaches(server.url, trusting: second.cert, token: token))

        // The second pair in the files: served from SIGHUP on.
        try Self.replace(cert, with: second.cert)
        try Self.replace(key, with: second.key)
        #expect(try await Self.reaches(server.url, trusting: first.cert, token: token), "not before SIGHUP")
        kill(server.process.processIdentifier, SIGHUP)
        #expect(try await ReloadTests.waitFor("and the TLS certificate; other settings need a restart", in: log))
        #expect(try await Self.reaches(server.url, trusting: second.cert, token: token))
        #expect(try await !Self.reaches(server.url, trusting: first.cert, token: token))

        // A certificate with another's key: refused, the second pair stays.
        let offset = try String(contentsOfFile: log, encoding: .utf8).utf8.count
        try Self.replace(cert, with: first.cert)
        kill(server.process.processIdentifier, SIGHUP)
        #expect(
            try await ReloadTests.waitFor(
                "SIGHUP: the TLS certificate did not reload; the old one stays", in: log, after: offset))
        #expect(try await ReloadTests.waitFor("is not the key of the certificate", in: log, after: offset))
        #expect(try await Self.reaches(server.url, trusting: second.cert, token: token))
        #expect(server.process.isRunning)
    }
}
#endif
