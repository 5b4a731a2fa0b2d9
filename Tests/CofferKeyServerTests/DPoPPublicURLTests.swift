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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Issuer.root + "/.venv/bin/python")
        process.arguments = [Self.repro, issuer.folder + "/repro"]
        try FileManager.default.createDirectory(atPath: issuer.folder + "/repro", withIntermediateDirectories: true)
        process.environment = ProcessInfo.processInfo.environment.merging([
            "COFFER_BIN": ServerProcess.binary.deletingLastPathComponent().path
        ]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("serve ") }
        #expect(lines.count == 2, "\(text)")
        for line in lines {
            #expect(line.contains("-> 401 dpop-proof-invalid") && !line.contains("released"), "\(line)")
        }
    }

    @Test func requiringProofsOffLoopbackNeedsThePublicURL() throws {
        let issuer = try Issuer()
        let process = Process()
        process.executableURL = ServerProcess.binary
        process.arguments = [
            "serve", "--listen", "0.0.0.0:0", "--require-dpop", "--data", issuer.folder + "/data",
            "--kek-passphrase-file", try ServerProcess.passphraseFile(issuer), "--issuer", Issuer.name,
            "--audience", Issuer.audience, "--jwks-file", issuer.folder + "/jwks.json",
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus != 0 && text.contains("--require-dpop needs --public-url"), "\(text)")
    }
}
#endif
