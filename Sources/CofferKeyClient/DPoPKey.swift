import Coffer
import CofferKeychain
import Crypto
import Foundation

/// The device's proof-of-possession key (RFC 9449, DPoP): a P-256 key kept
/// in the app's keychain that signs a short proof for every key request, so
/// a stolen sign-in token is useless without the device. The server gives
/// each such device its own keys, named by this key's ``thumbprint``.
///
/// ```swift
/// let device = try DPoPKey.inKeychain(keychain)   // made on first use
/// let client = try KeyServerClient(server: url, account: user.id, token: idToken, dpop: device)
/// ```
///
/// On Apple platforms a Secure Enclave key cannot be exported, and this
/// type signs with an exported key: keep the key in the regular keychain.
public struct DPoPKey: Sendable, CustomStringConvertible {
    let key: P256.Signing.PrivateKey

    /// A new key, in memory only.
    public init() { key = P256.Signing.PrivateKey() }

    /// The key under `tag` in `keychain`, generated there first if missing.
    ///
    /// ```swift
    /// let dpop = try DPoPKey.inKeychain(keychain)  // the same key at every launch
    /// ```
    public static func inKeychain(_ keychain: any Keychain, tag: String = "coffer.dpop") throws -> DPoPKey {
        _ = try keychain.getOrCreateKey(.p256, tag: tag, label: "Coffer DPoP key")
        guard case .p256(let key) = try keychain.exportPrivateKey(tag: tag, type: .p256) else {
            throw KeyClientError(.invalidArgument, "the keychain's key under \(tag) is not a P-256 key")
        }
        return DPoPKey(key: key)
    }

    init(key: P256.Signing.PrivateKey) { self.key = key }

    var jwk: (x: String, y: String) {
        let point = key.publicKey.x963Representation.dropFirst()
        return (Self.base64URL(point.prefix(32)), Self.base64URL(point.suffix(32)))
    }

    /// The key's RFC 7638 thumbprint (base64url SHA-256): the server's
    /// `cnf.jkt`, and the device its keys belong to (`jkt:` and this).
    public var thumbprint: String {
        let (x, y) = jwk
        return Self.base64URL(SHA256.hash(data: Data(#"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#.utf8)))
    }

    public var description: String { "DPoPKey(\(thumbprint), <redacted>)" }

    /// A proof for one request: a fresh `jti`, the method, the URL without
    /// its query, the time, the token's hash and the server's nonce.
    func proof(method: String, url: String, token: String, nonce: String?, now: Int64) throws -> String {
        let (x, y) = jwk
        let header: [String: Any] = [
            "typ": "dpop+jwt", "alg": "ES256", "jwk": ["kty": "EC", "crv": "P-256", "x": x, "y": y],
        ]
        var claims: [String: Any] = [
            "jti": Self.base64URL(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) }),
            "htm": method, "htu": String(url.prefix { $0 != "?" && $0 != "#" }), "iat": now,
            "ath": Self.base64URL(SHA256.hash(data: Data(token.utf8))),
        ]
        if let nonce { claims["nonce"] = nonce }
        let input =
            Self.base64URL(try JSONSerialization.data(withJSONObject: header, options: .sortedKeys)) + "."
            + Self.base64URL(try JSONSerialization.data(withJSONObject: claims, options: .sortedKeys))
        let signature = try key.signature(for: Data(input.utf8)).rawRepresentation
        return input + "." + Self.base64URL(signature)
    }

    static func base64URL(_ bytes: some Sequence<UInt8>) -> String { Base64URL.encode(Array(bytes)) }
}
