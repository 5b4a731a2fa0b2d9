#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// `/v1/stores/:store/anchor` (docs/store.md, "Anchors"): a state moves
/// only forward, per realm and store, each move audited; an older or
/// forked state is 409 unless accepted; the scope, the store id and the
/// body are checked.
@Suite struct StoreAnchorServerTests {
    static let store = String(repeating: "ab", count: 16)

    static func state(epoch: Int, _ sequences: [Int], digest: Character = "a") -> [String: Any] {
        [
            "epoch": epoch, "sequences": ["people": sequences + Array(repeating: 0, count: 16 - sequences.count)],
            "digest": String(repeating: digest, count: 64),
        ]
    }

    @Test(arguments: Backend.allCases) func statesMoveOnlyForwardAndEachMoveIsAudited(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let server = try await TestServer(issuer: issuer, backend: backend)
        let fleet = try await server.store.addOperator(name: "fleet", scopes: [.anchor])
        let rotator = try await server.store.addOperator(name: "rotator", scopes: [.rotate])
        try await server.run { client in
            let put = { (payload: [String: Any], token: String) async throws -> TestResponse in
                try await client.execute(
                    uri: "/v1/stores/\(Self.store)/anchor", method: .put, headers: bearer(token),
                    body: try body(payload))
            }
            let get = { () async throws -> TestResponse in
                try await client.execute(uri: "/v1/stores/\(Self.store)/anchor", method: .get, headers: bearer(fleet))
            }
            try expectProblem(try await get(), .notFound, "store-anchor-not-found")
            let first = try await put(Self.state(epoch: 2, [3, 1]), fleet)
            #expect(first.status == .ok)
            #expect((try json(first)["sequences"] as? [String: [Int]])?["people"]?.prefix(2) == [3, 1])
            #expect(try await put(Self.state(epoch: 2, [3, 1]), fleet).status == .ok)  // the same again
            #expect(try await put(Self.state(epoch: 2, [4, 1], digest: "b"), fleet).status == .ok)
            // Older, and forked (the same numbers, another digest; one number up, another down).
            try expectProblem(try await put(Self.state(epoch: 2, [3, 1]), fleet), .conflict, "store-anchor-not-newer")
            try expectProblem(
                try await put(Self.state(epoch: 2, [4, 1], digest: "c"), fleet), .conflict, "store-anchor-not-newer")
            try expectProblem(
                try await put(Self.state(epoch: 2, [5, 0], digest: "c"), fleet), .conflict, "store-anchor-not-newer")
            #expect((try json(try await get())["digest"] as? String)?.first == "b")
            // Accepted on purpose (a restore): then it is the anchored state.
            var accepted = Self.state(epoch: 1, [1])
            accepted["accept"] = true
            #expect(try await put(accepted, fleet).status == .ok)
            #expect(try json(try await get())["epoch"] as? Int == 1)

            try expectProblem(try await put(Self.state(epoch: 3, [5]), rotator), .forbidden, "scope-missing")
            let badID = try await client.execute(
                uri: "/v1/stores/NOT-HEX/anchor", method: .put, headers: bearer(fleet),
                body: try body(Self.state(epoch: 3, [5])))
            try expectProblem(badID, .badRequest, "invalid-store-anchor")
            var unknown = Self.state(epoch: 3, [5])
            unknown["extra"] = 1
            try expectProblem(try await put(unknown, fleet), .badRequest, "body-malformed")
            var short = Self.state(epoch: 3, [5])
            short["sequences"] = ["people": [1, 2]]
            try expectProblem(try await put(short, fleet), .badRequest, "invalid-store-anchor")
            var badDigest = Self.state(epoch: 3, [5])
            badDigest["digest"] = "zz"
            try expectProblem(try await put(badDigest, fleet), .badRequest, "invalid-store-anchor")
        }
        // A user's own store: under the user, apart from the operators' and
        // other users' anchors of the same id.
        try await server.run { client in
            let (alice, bob) = (try issuer.token("alice"), try issuer.token("bob"))
            let mine = "/v1/me/stores/\(Self.store)/anchor"
            let put = try await client.execute(
                uri: mine, method: .put, headers: bearer(alice), body: try body(Self.state(epoch: 9, [9])))
            #expect(put.status == .ok)
            let read = try await client.execute(uri: mine, method: .get, headers: bearer(alice))
            #expect(try json(read)["epoch"] as? Int == 9)
            try expectProblem(
                try await client.execute(uri: mine, method: .get, headers: bearer(bob)), .notFound,
                "store-anchor-not-found")
            let older = try await client.execute(
                uri: mine, method: .put, headers: bearer(alice), body: try body(Self.state(epoch: 8, [9])))
            try expectProblem(older, .conflict, "store-anchor-not-newer")
            var accepting = Self.state(epoch: 8, [9])
            accepting["accept"] = true
            try expectProblem(
                try await client.execute(uri: mine, method: .put, headers: bearer(alice), body: try body(accepting)),
                .forbidden, "scope-missing")
            let operators = try await client.execute(
                uri: "/v1/stores/\(Self.store)/anchor", method: .get, headers: bearer(fleet))
            #expect(try json(operators)["epoch"] as? Int == 1, "the operators' anchor of the same id is apart")
            try expectProblem(
                try await client.execute(uri: mine, method: .get, headers: bearer(fleet)), .forbidden,
                "operator-token-refused")
        }
        #expect(
            try server.count(
                "SELECT count(*) FROM audit WHERE action = 'store-anchor' AND subject = 'alice' AND actor = 'user'")
                == 1)
        // Two moves forward and one acceptance, each an entry of the audit chain.
        #expect(try server.count("SELECT count(*) FROM audit WHERE action = 'store-anchor' AND subject = ''") == 2)
        #expect(try server.count("SELECT count(*) FROM audit WHERE action = 'store-anchor-accept'") == 1)
        #expect(try await server.store.verifyAudit().broken == nil)
    }
}
#endif
