#if Server
import AsyncHTTPClient
import Coffer
import CofferKeyClient
import CofferKeyClientNIO
import Foundation
import Testing

/// HTTPS with a certificate made by openssl, and a client that trusts only it.
@Suite struct TLSTests {
    /// A self-signed P-256 certificate for 127.0.0.1 and its key (mode 600).
    static func certificate(in folder: String, name: String) throws -> (cert: String, key: String) {
        let cert = folder + "/\(name).pem"
        let key = folder + "/\(name)-key.pem"
        let run = try Spawned.run(
            "/usr/bin/env",
            [
                "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days",
                "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key,
                "-out", cert,
            ], output: .inherit, errors: .discard)
        guard run.status == 0 else { throw CofferError(.malformed, "openssl req failed") }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key)
        return (cert, key)
    }

    @Test func httpsWithAPinnedCertificateAndRefusalsWithout() async throws {
        let issuer = try Issuer()
        let (cert, key) = try Self.certificate(in: issuer.folder, name: "server")
        let (other, _) = try Self.certificate(in: issuer.folder, name: "other")
        let server = try ServerProcess(
            issuer: issuer, data: issuer.folder + "/data", extra: ["--tls-cert", cert, "--tls-key", key])
        defer { server.stop() }
        #expect(server.url.hasPrefix("https://"))
        let token = try issuer.token("tls-user")
        let pinned = try AsyncHTTPClientTransport.pinnedHTTPClient(
            trusting: try String(contentsOfFile: cert, encoding: .utf8))
        let wrongPin = try AsyncHTTPClientTransport.pinnedHTTPClient(
            trusting: try String(contentsOfFile: other, encoding: .utf8))
        let clients = [pinned, wrongPin, HTTPClient(eventLoopGroupProvider: .singleton)]
        let url = URL(string: server.url)!
        let keys = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for (index, http) in clients.enumerated() {
                group.addTask {
                    let client = try KeyServerClient(
                        server: url, account: "a", token: { token }, transport: AsyncHTTPClientTransport(http),
                        timeout: .seconds(3))
                    do {
                        return (index, try await client.currentKey(purpose: "notes").keyID)
                    } catch let error as KeyClientError where error.code == .unreachable {
                        return (index, nil)
                    }
                }
            }
            return try await group.reduce(into: [Int: String?]()) { $0[$1.0] = $1.1 }
        }
        for http in clients { try await http.shutdown() }
        #expect(keys[0]! != nil, "the pinned client reaches the server")
        #expect(keys[1]! == nil, "a client pinned to another certificate is refused")
        #expect(keys[2]! == nil, "the system's roots do not trust a self-signed certificate")
        #expect(throws: KeyClientError.self) {
            try AsyncHTTPClientTransport.pinnedHTTPClient(trusting: "not a certificate")
        }
    }

    @Test func plainHTTPIsRefusedOffLoopbackAndTLSNeedsAPrivateKey() throws {
        let issuer = try Issuer()
        #expect(throws: (any Error).self) {
            try ServerProcess(issuer: issuer, data: issuer.folder + "/data", extra: ["--listen", "0.0.0.0:0"])
        }
        let (cert, key) = try Self.certificate(in: issuer.folder, name: "server")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: key)
        #expect(throws: (any Error).self) {
            try ServerProcess(
                issuer: issuer, data: issuer.folder + "/data", extra: ["--tls-cert", cert, "--tls-key", key])
        }
    }
}
#endif
