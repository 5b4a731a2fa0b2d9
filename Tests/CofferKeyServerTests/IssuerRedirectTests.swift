#if Server
import Coffer
import CofferKeyClientNIO
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// OpenID discovery and the JWKS follow a redirect only within the origin
/// asked for (security review 4, H5): one to another host, another scheme
/// or another port is refused, naming where it pointed, even though the
/// place it points to would answer with good keys; one within the origin
/// is followed; a loop ends.
@Suite struct IssuerRedirectTests {
    @Test func redirectsAreFollowedOnlyWithinTheOrigin() async throws {
        let issuer = try Issuer()
        let port = Locked(0)
        let router = Router()
        router.get("/jwks") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(
                    byteBuffer: ByteBuffer(
                        bytes: try Data(contentsOf: URL(fileURLWithPath: issuer.folder + "/jwks.json")))))
        }
        func redirect(
            _ path: String, to location: @escaping @Sendable () -> String, status: HTTPResponse.Status = .found
        ) {
            router.get(RouterPath(path)) { _, _ in Response(status: status, headers: [.location: location()]) }
        }
        redirect("/moved", to: { "/jwks" }, status: .temporaryRedirect)
        redirect("/twice", to: { "/moved" })
        redirect("/other-host", to: { "http://localhost:\(port.withLock { $0 })/jwks" })
        redirect("/other-scheme", to: { "https://127.0.0.1:\(port.withLock { $0 })/jwks" })
        redirect("/other-port", to: { "http://127.0.0.1:1/jwks" })
        redirect("/loop", to: { "/loop" })
        redirect(
            "/issuer/.well-known/openid-configuration", to: { "http://localhost:\(port.withLock { $0 })/document" })
        redirect("/same/.well-known/openid-configuration", to: { "/document" }, status: .permanentRedirect)
        router.get("/document") { _, _ -> Response in
            let base = "http://127.0.0.1:\(port.withLock { $0 })"
            let document =
                #"{"issuer": "\#(base)/same", "jwks_uri": "\#(base)/jwks", "id_token_signing_alg_values_supported": ["ES256"]}"#
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: document)))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            port.withLock { $0 = client.port! }
            let base = "http://127.0.0.1:\(client.port!)"
            func verifier(_ path: String) async throws -> SignInVerifier {
                try await SignInVerifier(
                    policy: TokenPolicy(issuer: Issuer.name, audience: Issuer.audience),
                    jwks: try SignInVerifier.issuerKeys(at: URL(string: base + path)!))
            }
            for path in ["/moved", "/twice"] {
                #expect(try await verifier(path).subject(of: Substring(try issuer.token("uri"))) == "uri", "\(path)")
            }
            for (path, says) in [
                ("/other-host", "redirects to http://localhost:"), ("/other-scheme", "redirects to https://127.0.0.1:"),
                ("/other-port", "redirects to http://127.0.0.1:1"), ("/loop", "redirects more than 5 times"),
            ] {
                do {
                    _ = try await verifier(path)
                    Issue.record("\(path) was followed")
                } catch {
                    #expect("\(error)".contains(says), "\(path): \(error)")
                }
            }
            let found = try await IssuerDiscovery.discover(issuer: base + "/same")
            #expect(found.jwksURI.absoluteString == base + "/jwks")
            do {
                _ = try await IssuerDiscovery.discover(issuer: base + "/issuer")
                Issue.record("discovery left the issuer's origin")
            } catch {
                #expect("\(error)".contains("outside http://127.0.0.1:\(client.port!)"), "\(error)")
            }
        }
    }
}
#endif
