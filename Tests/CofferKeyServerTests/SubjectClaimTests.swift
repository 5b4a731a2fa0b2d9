#if Server
import Coffer
import CofferKeyServer
import CofferKeyServerCore
import Foundation
import Testing

/// `--subject-claim` names only a claim the verifier checks (security
/// review 3, G14): `sub`, or `email` with `email_verified` true.
@Suite struct SubjectClaimTests {
    static func verifier(_ issuer: Issuer, claim: String) async throws -> SignInVerifier {
        let jwks = issuer.folder + "/jwks.json"
        return try await SignInVerifier(
            policy: TokenPolicy(issuer: Issuer.name, audience: Issuer.audience, subjectClaim: claim),
            jwks: { try Data(contentsOf: URL(fileURLWithPath: jwks)) })
    }

    static func code(_ body: () async throws -> String) async -> String {
        do { return "accepted " + (try await body()) } catch let error as KeyServerError {
            return error.code.name
        } catch {
            return "\(error)"
        }
    }

    @Test func anEmailIsTheSubjectOnlyWhenTheIssuerVerifiedIt() async throws {
        let issuer = try Issuer()
        let verifier = try await Self.verifier(issuer, claim: "email")
        let address = "ana@example.com"
        func subject(_ extra: [String: Any]) async throws -> String {
            let token = try issuer.token("ana-sub", ["email": address].merging(extra) { $1 })
            return await Self.code { try await verifier.subject(of: Substring(token)) }
        }
        #expect(try await subject(["email_verified": true]) == "accepted \(address)")
        // Amazon Cognito sends the string.
        #expect(try await subject(["email_verified": "true"]) == "accepted \(address)")
        for unverified: Any in [false, "false", 1, "yes", [true]] {
            #expect(try await subject(["email_verified": unverified]) == "token-subject-unverified", "\(unverified)")
        }
        let token = try issuer.token("ana-sub", ["email": address])
        #expect(await Self.code { try await verifier.subject(of: Substring(token)) } == "token-subject-unverified")
    }

    @Test func aClaimTheVerifierDoesNotCheckIsRefusedByTheLibraryAndTheServer() async throws {
        let issuer = try Issuer()
        for claim in ["name", "preferred_username", "nickname", "email_verified", "", "SUB"] {
            await #expect(throws: CofferError.self, "\(claim)") { _ = try await Self.verifier(issuer, claim: claim) }
        }
        // coffer-server refuses to start, before it reads the issuer's keys.
        let run = try Spawned.run(
            ServerProcess.binary.path,
            [
                "serve", "--data", issuer.folder + "/data", "--kek-passphrase-file", issuer.folder + "/none",
                "--issuer", Issuer.name, "--audience", Issuer.audience, "--jwks-file", issuer.folder + "/missing.json",
                "--subject-claim", "preferred_username",
            ], errors: .capture)
        #expect(run.status == 64, "\(run.errorText)")
        #expect(run.errorText.contains("--subject-claim preferred_username is not a claim the server checks"))
    }
}
#endif
