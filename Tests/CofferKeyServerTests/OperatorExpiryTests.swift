#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Operator tokens that expire (operator trial 4, friction 7: they never
/// did): refused once past their time with a code of their own, listed
/// with it, and made only within bounds.
@Suite struct OperatorExpiryTests {
    @Test(arguments: Backend.allCases) func aTokenPastItsExpiryIsRefused(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: backend)
        let lasting = try await server.store.addOperator(name: "lasting", scopes: [.read])
        let brief = try await server.store.addOperator(name: "brief", scopes: [.read], expiresIn: 120)
        let listed = try await server.store.operators()
        let made = try #require(listed.first { $0.name == "brief" })
        #expect(made.expires == made.created + 120)
        #expect(listed.first { $0.name == "lasting" }?.expires == nil)
        for life: Int64 in [0, 59, 10 * 366 * 86400 + 1] {
            await #expect(throws: KeyServerError.self) {
                try await server.store.addOperator(name: "bad-\(life)", scopes: [.read], expiresIn: life)
            }
        }
        try await server.run { client in
            let read = { (token: String) async throws -> TestResponse in
                try await client.execute(uri: "/v1/admin/subjects", method: .get, headers: bearer(token))
            }
            #expect(try await read(brief).status == .ok)
            server.skip.withLock { $0 = 100 }
            #expect(try await read(brief).status == .ok)
            server.skip.withLock { $0 = 130 }
            try expectProblem(try await read(brief), .unauthorized, "operator-token-expired")
            #expect(try await read(lasting).status == .ok)
        }
    }

    /// `coffer-server operator add --expires-in`, and `operator list`.
    @Test func theCommandLineMakesAndListsExpiringTokens() throws {
        let issuer = try Issuer()
        let (data, token) = try ServerProcess.initialized(
            issuer: issuer, operator: "weekly", extra: ["--expires-in", "7d"])
        #expect(token.hasPrefix("cofop_"), "\(token)")
        let list = try Spawned.run(
            ServerProcess.binary.path,
            ["operator", "list", "--data", data, "--kek-passphrase-file", issuer.folder + "/kek-passphrase"],
            errors: .capture)
        #expect(list.status == 0, "\(list.errorText)")
        let line = try #require(list.text.split(separator: "\n").first { $0.hasPrefix("weekly\t") })
        let expiry = try #require(line.split(separator: "\t").last)
        #expect(expiry.hasPrefix("expires 20"), "\(line)")
        let bad = try Spawned.run(
            ServerProcess.binary.path,
            [
                "operator", "add", "--data", data, "--kek-passphrase-file", issuer.folder + "/kek-passphrase", "--name",
                "odd", "--expires-in", "7w",
            ], errors: .capture)
        #expect(bad.status == 64 && bad.errorText.contains("--expires-in"), "\(bad.errorText)")
    }
}
#endif
