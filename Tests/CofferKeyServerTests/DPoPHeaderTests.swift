#if Server
import Coffer
import Foundation
import Testing

@testable import CofferKeyClient
@testable import CofferKeyServer
@testable import CofferKeyServerCore

/// The memory of accepted proof headers: it saves work, never a check.
@Suite struct DPoPHeaderTests {
    static let url = "https://keys.example/v1/keys/notes"

    static func check(_ proof: String, _ headers: DPoPHeaders, now: Int64) throws -> DPoPProof {
        try DPoPProof.check(
            proof, method: "POST", accepts: { $0 == url }, accessToken: "token", now: now, leeway: 60, headers: headers
        ).0
    }

    static func segments(_ proof: String) -> [String] { proof.split(separator: ".").map(String.init) }

    @Test func aDevicesHeaderIsWorkedOutOnceAndSignaturesAreStillChecked() throws {
        let headers = DPoPHeaders()
        let (phone, laptop) = (DPoPKey(), DPoPKey())
        let now = Int64(Date().timeIntervalSince1970)
        let first = try phone.proof(method: "POST", url: Self.url, token: "token", nonce: nil, now: now)
        let second = try phone.proof(method: "POST", url: Self.url, token: "token", nonce: nil, now: now)
        #expect(try Self.check(first, headers, now: now).thumbprint == phone.thumbprint)
        #expect(try Self.check(second, headers, now: now).thumbprint == phone.thumbprint)
        #expect(headers.count == 1)
        // The phone's (known) header over claims signed by the laptop.
        let forged = try laptop.proof(method: "POST", url: Self.url, token: "token", nonce: nil, now: now)
        let mixed = [Self.segments(first)[0], Self.segments(forged)[1], Self.segments(forged)[2]].joined(separator: ".")
        #expect(throws: KeyServerError.self) { try Self.check(mixed, headers, now: now) }
        // A refused header is not remembered, and stays refused.
        let jwtHeader = Base64URL.encode(
            Array(
                #"{"alg":"ES256","jwk":{"crv":"P-256","kty":"EC","x":"\#(phone.jwk.x)","y":"\#(phone.jwk.y)"},"typ":"JWT"}"#
                    .utf8))
        let refused = [jwtHeader, Self.segments(first)[1], Self.segments(first)[2]].joined(separator: ".")
        for _ in 0..<2 {
            #expect(throws: KeyServerError.self) { try Self.check(refused, headers, now: now) }
        }
        #expect(headers.count == 1)
        #expect(try Self.check(forged, headers, now: now).thumbprint == laptop.thumbprint)
        #expect(headers.count == 2)
    }
}
#endif
