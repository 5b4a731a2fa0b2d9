#if Server
import Foundation
import Testing

/// The passphrase-sealed KEK ring is under the rollback guard (security
/// review 4, G11): an older `kek.ckr` put back after a rotation is
/// refused, with the hint, until `kek accept-restore`; and a secret file
/// is checked on its open descriptor, so `/dev/fd/N` works, a pipe (read
/// twice by one command) as well as a file, while a file open to others
/// is still refused.
@Suite struct KEKRollbackTests {
    static func tool(_ script: String, in folder: String) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script]
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["COFFER_STATE_DIR": folder + "/state", "SERVER": ServerProcess.binary.path]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test func anOlderKEKRingIsRefusedUntilItsRestoreIsAccepted() throws {
        let folder = NSTemporaryDirectory() + "coffer-kek-rollback-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder + "/state", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data("a long kek passphrase".utf8).write(to: URL(fileURLWithPath: folder + "/pw"))
        chmod(folder + "/pw", 0o600)
        let kek = "--data D --kek-passphrase-file pw"
        var run = try Self.tool("\"$SERVER\" kek init \(kek) && cp D/kek.ckr old.ckr", in: folder)
        #expect(run.status == 0, "\(run.output)")
        run = try Self.tool("\"$SERVER\" kek rotate --settle 0 \(kek) && cp old.ckr D/kek.ckr", in: folder)
        #expect(run.status == 0, "\(run.output)")
        run = try Self.tool("\"$SERVER\" kek list \(kek)", in: folder)
        #expect(run.status != 0 && run.output.contains("an older copy was put back"), "\(run.output)")
        #expect(run.output.contains("coffer-server kek accept-restore"), "\(run.output)")
        // The server itself refuses it too, before it serves.
        run = try Self.tool("\"$SERVER\" operator list \(kek)", in: folder)
        #expect(run.status != 0 && run.output.contains("an older copy was put back"), "\(run.output)")
        run = try Self.tool("\"$SERVER\" kek accept-restore \(kek) && \"$SERVER\" kek list \(kek)", in: folder)
        #expect(run.status == 0 && run.output.contains("accepted D/kek.ckr at generation"), "\(run.output)")

        // /dev/fd/N: a pipe (kek list reads the passphrase twice) and a file.
        let fromPipe = "--data D --kek-passphrase-file <(printf 'a long kek passphrase')"
        run = try Self.tool("\"$SERVER\" kek list \(fromPipe)", in: folder)
        #expect(run.status == 0 && run.output.contains("primary"), "\(run.output)")
        run = try Self.tool("\"$SERVER\" kek list --data D --kek-passphrase-file /dev/fd/3 3< pw", in: folder)
        #expect(run.status == 0 && run.output.contains("primary"), "\(run.output)")
        chmod(folder + "/pw", 0o644)
        run = try Self.tool("\"$SERVER\" kek list --data D --kek-passphrase-file /dev/fd/3 3< pw", in: folder)
        #expect(run.status != 0 && run.output.contains("open to other users"), "\(run.output)")
        run = try Self.tool("\"$SERVER\" kek list --data D --kek-passphrase-file D", in: folder)
        #expect(run.status != 0 && run.output.contains("neither a regular file nor a pipe"), "\(run.output)")
    }
}
#endif
