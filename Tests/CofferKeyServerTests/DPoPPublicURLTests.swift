#if Server
import Coffer
import Foundation
import Testing

/// G5 (security review 3): a DPoP proof's URL never comes from the
/// request's Host header. The review's own reproduction runs against
/// `coffer-server` as built; a server that requires proofs off loopback
/// does not start without its public URL.
@Suite struct DPoPPublicURLTests {
    static let repro = Issuer.root + "/../shared/reviews/repro/g5_dpop_htu_host.py"

    @Test func aProofForAnotherOriginIsRefusedWhateverTheHost() throws {
        let issuer = try Issuer()
        try FileManager.default.createDirectory(atPath: issuer.folder + "/repro", withIntermediateDirectories: true)
        let run = try Spawned.run(
            Issuer.root + "/.venv/bin/python", [Self.repro, issuer.folder + "/repro"],
            environment: ["COFFER_BIN": try ServerProcess.initializingBinary(in: issuer.folder)], mergeErrors: true)
        let text = run.text
        #expect(run.status == 0, "\(text)")
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("serve ") }
        #expect(lines.count == 2, "\(text)")
        for line in lines {
            #expect(line.contains("-> 401 dpop-proof-invalid") && !line.contains("released"), "\(line)")
        }
    }

    @Test func requiringProofsOffLoopbackNeedsThePublicURL() throws {
        let issuer = try Issuer()
        let run = try Spawned.run(
            ServerProcess.binary.path,
            [
                "serve", "--listen", "0.0.0.0:0", "--require-dpop", "--data", issuer.folder + "/data",
                "--kek-passphrase-file", try ServerProcess.passphraseFile(issuer), "--issuer", Issuer.name,
                "--audience", Issuer.audience, "--jwks-file", issuer.folder + "/jwks.json",
            ], output: .discard, errors: .capture)
        #expect(run.status != 0 && run.errorText.contains("--require-dpop needs --public-url"), "\(run.errorText)")
    }
}
#endif
