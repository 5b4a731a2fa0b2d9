#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import NIOSSL
import Testing

/// The policies `coffer-server serve` holds are the library's
/// (``KeyServerConfiguration/validate(for:)``), so an app that embeds the
/// key server through `buildApplication` inherits them.
@Suite struct EmbedderPolicyTests {
    @Test func buildApplicationRefusesWhatServeRefuses() async throws {
        let issuer = try Issuer()
        let plain = try await TestServer(issuer: issuer, kek: KeyRing(), backend: .sqlite)
        var required = DPoPPolicy()
        required.required = true
        let dpop = try await TestServer(issuer: issuer, kek: KeyRing(), backend: .sqlite, dpop: required)
        let tls = TLSConfiguration.makeClientConfiguration()
        for (server, configuration, says) in [
            (plain.server, KeyServerConfiguration(host: "0.0.0.0", port: 0), "plain HTTP is served on loopback only"),
            (dpop.server, KeyServerConfiguration(host: "0.0.0.0", port: 0, tls: tls), "needs the public URL"),
        ] {
            #expect {
                _ = try buildApplication(server, configuration)
            } throws: { error in
                (error as? CofferError)?.code == .invalidArgument && "\(error)".contains(says)
            }
        }
        // What they allow: loopback without TLS, DPoP on loopback, TLS anywhere.
        for (server, configuration) in [
            (plain.server, KeyServerConfiguration(host: "127.0.0.1", port: 0)),
            (dpop.server, KeyServerConfiguration(host: "::1", port: 0)),
            (plain.server, KeyServerConfiguration(host: "0.0.0.0", port: 0, tls: tls)),
        ] {
            #expect(throws: Never.self) { try configuration.validate(for: server) }
        }
    }
}
#endif
