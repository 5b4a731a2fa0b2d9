#if Server
import Coffer
import CofferKeyServerCore
import Crypto
import Foundation

/// Device-bound requests (RFC 9449, DPoP): the client signs a short proof
/// for every request with a P-256 key that never leaves the device (the
/// Secure Enclave's curve), and the server checks it: the method and URL it
/// names, its age, the hash of the access token it accompanies, a nonce the
/// server issued, and that its `jti` was never seen before by any replica.
/// A key request with a proof is answered with the key of the device named
/// by the proof key's thumbprint, and a token whose `cnf.jkt` names a key
/// is honoured only with a proof by that key. With `required`, a bearer
/// token alone obtains nothing.
public struct DPoPPolicy: Sendable, Hashable {
    /// Whether every key request must carry a proof (`--require-dpop`).
    public var required: Bool
    /// The URL clients reach this server at, without a trailing slash
    /// (`https://keys.example.com`); a proof's `htu` must be it plus the
    /// request's path. When nil, only a loopback URL is accepted
    /// (`http://127.0.0.1`, `http://[::1]` or `http://localhost`, any port,
    /// plus the path): a server for others needs its public URL, and the
    /// request's `Host` is never taken for it (`coffer-server serve`
    /// refuses `--require-dpop` without `--public-url` off loopback).
    public var publicURL: String?
    /// How far a proof's `iat` may be from the server's clock, in seconds.
    public var leeway: Int64

    /// Until when a spent proof is remembered (security review 3, G10):
    /// any replica accepts it while its own clock is within `leeway` of
    /// `iat`, and the replica that forgets it reads its own clock too, so
    /// it is kept for the acceptance window plus as much again for the
    /// replicas' clocks to disagree: `iat + 2·leeway + 1`.
    func spentUntil(issuedAt: Int64) -> Int64 { issuedAt + 2 * leeway + 1 }

    public init(required: Bool = false, publicURL: String? = nil, leeway: Int64 = 60) {
        self.required = required
        self.publicURL = publicURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.leeway = leeway
    }

    /// Nonces change every five minutes; the current and the previous one are accepted.
    static let nonceWindow: Int64 = 300
    static let maxProofBytes = 4096
}

/// A checked proof: who signed it.
package struct DPoPProof: Sendable {
    /// The base64url SHA-256 thumbprint of the proof key (RFC 7638).
    let thumbprint: String
    /// SHA-256 of the thumbprint and the `jti`: what the replay cache holds.
    let replayHash: Data
    let issuedAt: Int64

    static func refused(_ detail: String) -> KeyServerError {
        KeyServerError(.dpopProofInvalid, detail)
    }

    /// Checks everything in the proof that needs no database: its form, its
    /// signature by the key in its header, `htm`, `htu`, `iat`, `ath`.
    /// The nonce and the `jti` are checked by the caller.
    package static func check(
        _ proof: String, method: String, accepts: (String) -> Bool, accessToken: Substring, now: Int64,
        leeway: Int64, headers: DPoPHeaders
    ) throws -> (DPoPProof, nonce: String?) {
        guard proof.utf8.count <= DPoPPolicy.maxProofBytes else { throw refused("the DPoP proof is too long") }
        let bytes = Array(proof.utf8)
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let claimBytes = Base64URL.decode(bytes: parts[1]),
            let signature = Base64URL.decode(bytes: parts[2]),
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(claimBytes))
        else { throw refused("the DPoP proof is not a signed JWT") }
        let signer = try headers.signer(parts[0])
        guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            signer.key.isValidSignature(ecdsa, for: bytes[..<(parts[0].count + 1 + parts[1].count)])
        else { throw refused("the DPoP proof's signature does not verify") }
        guard let jti = claims.jti, (1...256).contains(jti.utf8.count) else {
            throw refused("the DPoP proof has no jti")
        }
        guard claims.htm == method else {
            throw refused("the DPoP proof is for another method")
        }
        guard let htu = claims.htu, accepts(Self.withoutQuery(htu)) else {
            throw refused("the DPoP proof is for another URL")
        }
        guard let seconds = claims.iat, seconds.isFinite, abs(seconds) < 1e15, abs(Int64(seconds) - now) <= leeway
        else {
            throw refused("the DPoP proof's iat is not within \(leeway) s of the server's clock")
        }
        let ath = Base64URL.encode(Array(SHA256.hash(data: Data(accessToken.utf8))))
        guard claims.ath == ath else {
            throw refused("the DPoP proof's ath is not the hash of this access token")
        }
        let thumbprint = signer.thumbprint
        let replayHash = Data(SHA256.hash(data: Data((thumbprint + " " + jti).utf8)))
        return (DPoPProof(thumbprint: thumbprint, replayHash: replayHash, issuedAt: Int64(seconds)), claims.nonce)
    }

    /// The key a proof header names and its RFC 7638 thumbprint, or why the
    /// header is refused.
    static func signer(ofHeader segment: ArraySlice<UInt8>) throws -> DPoPHeaders.Signer {
        guard let headerBytes = Base64URL.decode(bytes: segment),
            let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes))
        else { throw refused("the DPoP proof is not a signed JWT") }
        guard header.typ == "dpop+jwt" else { throw refused("the DPoP proof's typ is not dpop+jwt") }
        guard header.alg == "ES256" else { throw refused("DPoP proofs are ES256 (P-256) only") }
        guard let jwk = header.jwk, jwk.kty == "EC", jwk.crv == "P-256", jwk.d == nil,
            let x = jwk.x, let y = jwk.y,
            let xBytes = Base64URL.decode(x), let yBytes = Base64URL.decode(y),
            xBytes.count == 32, yBytes.count == 32,
            let key = try? P256.Signing.PublicKey(x963Representation: [0x04] + xBytes + yBytes)
        else { throw refused("the DPoP proof's jwk is not a public P-256 key") }
        // x and y are canonical base64url (the decoder takes nothing else),
        // so they go into the thumbprint's JSON as they came.
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        let thumbprint = Base64URL.encode(Array(SHA256.hash(data: Data(canonical.utf8))))
        return DPoPHeaders.Signer(key: key, thumbprint: thumbprint)
    }

    /// The fields of a proof's header and claims this server reads; a field
    /// of the wrong JSON type makes the proof malformed.
    private struct Header: Decodable {
        let typ: String?
        let alg: String?
        let jwk: JWK?
    }

    private struct JWK: Decodable {
        let kty: String?
        let crv: String?
        let x: String?
        let y: String?
        /// A private key's scalar: present, the key is refused.
        let d: Present?
    }

    /// Any JSON value but null, read only to know it is there.
    private struct Present: Decodable {
        init(from decoder: any Decoder) throws {}
    }

    private struct Claims: Decodable {
        let jti: String?
        let htm: String?
        let htu: String?
        /// A NumericDate (RFC 7519 §2): seconds, possibly with a fraction.
        let iat: Double?
        let ath: String?
        let nonce: String?
    }

    static func withoutQuery(_ url: String) -> String {
        String(url.prefix { $0 != "?" && $0 != "#" })
    }
}

/// Proof headers accepted before, by their base64url bytes. A device signs
/// every proof with one key, so its header is the same every time and its
/// key, checked on the curve, and thumbprint are worked out once. Only
/// accepted headers are kept; the memory is emptied when full. Keys here
/// are public.
package final class DPoPHeaders: Sendable {
    struct Signer: Sendable {
        let key: P256.Signing.PublicKey
        let thumbprint: String
    }

    static let capacity = 10_000
    let known = Locked<[ArraySlice<UInt8>: Signer]>([:])

    package init() {}

    func signer(_ segment: ArraySlice<UInt8>) throws -> Signer {
        if let signer = known.withLock({ $0[segment] }) { return signer }
        let signer = try DPoPProof.signer(ofHeader: segment)
        known.withLock { known in
            if known.count >= Self.capacity { known.removeAll(keepingCapacity: true) }
            known[ArraySlice(Array(segment))] = signer
        }
        return signer
    }

    var count: Int { known.withLock { $0.count } }
}

/// Server nonces: the window's number and a MAC over it under a key every
/// replica shares (kept in the database, sealed under the KEK), so any
/// replica accepts what another issued, with no lookup. Only two windows
/// are ever valid, so their tags are computed once each and remembered.
final class DPoPNonces: Sendable {
    let key: SymmetricKey
    /// Tags by window: at most the two valid windows and the one asked
    /// for last.
    let tags = Locked<[Int64: [UInt8]]>([:])

    init(key: SymmetricKey) { self.key = key }

    func nonce(now: Int64) -> String { make(window: now / DPoPPolicy.nonceWindow) }

    func make(window: Int64) -> String {
        Base64URL.encode(Self.counter(window) + tag(window))
    }

    static func counter(_ window: Int64) -> [UInt8] { withUnsafeBytes(of: window.bigEndian) { Array($0) } }

    /// The window's tag: the first 16 bytes of HMAC-SHA256 over its number.
    func tag(_ window: Int64) -> [UInt8] {
        if let known = tags.withLock({ $0[window] }) { return known }
        let made = Array(
            HMAC<SHA256>.authenticationCode(for: Array("coffer dpop nonce".utf8) + Self.counter(window), using: key)
                .prefix(16))
        tags.withLock { tags in
            if tags.count >= 3 { tags = tags.filter { $0.key >= window - 1 } }
            tags[window] = made
        }
        return made
    }

    func isValid(_ nonce: String?, now: Int64) -> Bool {
        guard let nonce, let bytes = Base64URL.decode(nonce), bytes.count == 24 else { return false }
        let window = bytes.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        let current = now / DPoPPolicy.nonceWindow
        guard window == current || window == current - 1 else { return false }
        return ConstantTime.equal(tag(window), Array(bytes.suffix(16)))
    }
}

/// The nonce issuer every replica shares, owned by the DPoP check: its
/// key is made by the first replica that needs it, kept in the database
/// sealed under the KEK (`ServerKeyStore.sharedSecretKey(_:)`).
final class DPoPNonceSource: Sendable {
    let store: ServerKeyStore
    let issuer = Locked<DPoPNonces?>(nil)

    init(store: ServerKeyStore) { self.store = store }

    func nonces() async throws -> DPoPNonces {
        if let issuer = issuer.withLock({ $0 }) { return issuer }
        let made = DPoPNonces(key: try await store.sharedSecretKey("dpop-nonce-key"))
        issuer.withLock { $0 = made }
        return made
    }
}
#endif
