#if Server
import AsyncHTTPClient
import Coffer
import CofferKeyServerCore
import Foundation
import NIOCore
import NIOHTTP1

/// What an OpenID provider says of itself at
/// `ISSUER/.well-known/openid-configuration` (OpenID Connect Discovery
/// 1.0, §4), as far as this server uses it: where its keys are and which
/// algorithms it signs ID tokens with.
///
/// ```swift
/// let found = try await IssuerDiscovery.discover(issuer: "https://accounts.example.com")
/// let verifier = try await SignInVerifier(
///     policy: TokenPolicy(issuer: found.issuer, audience: "notes-app", algorithms: found.algorithms),
///     jwks: try SignInVerifier.issuerKeys(at: found.jwksURI))
/// ```
public struct IssuerDiscovery: Sendable, Hashable {
    /// The issuer, exactly as configured and as the document states it.
    public let issuer: String
    /// Where its key set is (`jwks_uri`).
    public let jwksURI: URL
    /// The ID-token signing algorithms it offers that this server accepts.
    public let algorithms: [String]

    /// The largest configuration document read.
    public static let maxBytes = 1 << 20

    /// Where an issuer's configuration is: its URL with
    /// `/.well-known/openid-configuration` appended (a trailing slash of
    /// the issuer's path is not doubled).
    public static func configurationURL(issuer: String) throws -> URL {
        guard let url = URL(string: issuer), let scheme = url.scheme, url.host != nil, url.query == nil,
            url.fragment == nil
        else {
            throw CofferError(.invalidArgument, "the issuer must be a URL with a host and no query or fragment")
        }
        guard scheme == "https" || (scheme == "http" && Loopback.isHost(url.host)) else {
            throw CofferError(.invalidArgument, "the issuer must be https (http only on loopback) for discovery")
        }
        let base = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        return URL(string: base + "/.well-known/openid-configuration")!
    }

    /// Fetches and checks the document: a 200 answer of at most 1 MiB
    /// within 10 seconds, a JSON object whose `issuer` is `issuer` exactly
    /// (§4.3: a document for another issuer is refused), a `jwks_uri` that
    /// is https (http only on loopback), and at least one of ES256, RS256
    /// and EdDSA among `id_token_signing_alg_values_supported`.
    /// A redirect is followed only within the issuer's origin (``IssuerFetch``).
    public static func discover(issuer: String, http: HTTPClient = IssuerFetch.client) async throws
        -> IssuerDiscovery
    {
        let url = try configurationURL(issuer: issuer)
        let response: (status: HTTPResponseStatus, body: ByteBuffer)
        do {
            response = try await IssuerFetch.get(
                url, what: "the issuer's configuration", maximumBytes: maxBytes, http: http)
        } catch is NIOTooManyBytesError {
            throw CofferError(.malformed, "the issuer's configuration is over \(maxBytes) bytes")
        } catch let error as CofferError {
            throw error
        } catch {
            throw CofferError(.io, "the issuer's configuration at \(url.absoluteString) could not be read: \(error)")
        }
        guard response.status == .ok else {
            throw CofferError(
                .malformed, "the issuer's configuration at \(url.absoluteString) answered \(response.status.code)")
        }
        let body = response.body
        return try parse(Data(body.readableBytesView), issuer: issuer)
    }

    /// Checks a configuration document as ``discover(issuer:http:)`` does.
    public static func parse(_ data: Data, issuer: String) throws -> IssuerDiscovery {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw CofferError(.malformed, "the issuer's configuration is not a JSON object")
        }
        guard let stated = object["issuer"] as? String else {
            throw CofferError(.malformed, "the issuer's configuration has no \"issuer\"")
        }
        guard stated == issuer else {
            throw CofferError(
                .malformed,
                "the configuration is for the issuer \"\(stated.prefix(200))\", not \"\(issuer)\" (compared exactly)")
        }
        guard let jwks = object["jwks_uri"] as? String, let jwksURI = URL(string: jwks), jwksURI.host != nil,
            jwksURI.scheme == "https" || (jwksURI.scheme == "http" && Loopback.isHost(jwksURI.host))
        else {
            throw CofferError(.malformed, "the issuer's jwks_uri is missing, or not https (http only on loopback)")
        }
        guard let offered = object["id_token_signing_alg_values_supported"] as? [String] else {
            throw CofferError(
                .malformed, "the issuer's configuration has no id_token_signing_alg_values_supported list")
        }
        let algorithms = SignInVerifier.supportedAlgorithms.filter(offered.contains)
        guard !algorithms.isEmpty else {
            throw CofferError(
                .unsupported,
                "the issuer signs ID tokens with \(offered.prefix(8).joined(separator: ", ")); this server accepts \(SignInVerifier.supportedAlgorithms.joined(separator: ", "))"
            )
        }
        return IssuerDiscovery(issuer: issuer, jwksURI: jwksURI, algorithms: algorithms)
    }
}
#endif
