import Foundation
import Testing

/// G3 (security review 3): every `coffer server-key` command that sends an
/// operator token refuses `http://` off loopback before it connects, as
/// `server-key get` refuses it for a user's token.
@Suite struct OperatorTransportCLITests {
    static let commands: [[String]] = [
        ["rotate", "--subject", "alice", "--purpose", "notes"],
        ["retire", "--subject", "alice", "--purpose", "notes", "--minimum-version", "2"],
        ["shred", "--subject", "alice"], ["undo-shred", "--subject", "alice"],
        ["shred", "--subject", "alice", "--dry-run"], ["show", "--subject", "alice"], ["subjects"],
    ]

    @Test(arguments: commands) func operatorTokensNeverGoOutInTheClear(_ command: [String]) throws {
        let directory = try TemporaryDirectory()
        try directory.write("op.tok", Array("cofop_0123456789abcdef0123456789abcdef".utf8))
        // 127.1 is loopback to the kernel but not to the client: treated as remote.
        for server in ["http://127.1:9", "http://keys.example.com", "http://[::ffff:127.0.0.1]:9"] {
            let result = try CLI.coffer(
                ["server-key"] + command + ["--server", server, "--operator-token-file", "op.tok"], in: directory.url)
            #expect(
                result.status != 0 && result.stderr.contains("must be https"),
                "\(command[0]) \(server): \(result.stderr)")
        }
    }
}
