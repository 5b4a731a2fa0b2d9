#if Server
import Foundation
import Testing

/// The start-up log names what an operator compares between replicas:
/// the version, the database, the realm, the KEK's primary key id (the
/// one `kek list` prints) and TLS; never a secret.
@Suite struct StartupLogTests {
    @Test func theStartNamesTheDatabaseRealmAndKEK() throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let log = issuer.folder + "/server.log"
        let server = try ServerProcess(issuer: issuer, data: data, log: log, extra: ["--realm", "north"])
        server.stop()
        let logged = try String(contentsOfFile: log, encoding: .utf8)
        let listed = try Spawned.run(
            ServerProcess.binary.path,
            ["kek", "list", "--data", data, "--kek-passphrase-file", try ServerProcess.passphraseFile(issuer)])
        let primary = try #require(
            String(decoding: listed.output, as: UTF8.self).split(separator: "\n").first { $0.contains("primary") }?
                .split(separator: " ").first)
        #expect(logged.contains("coffer-server 0.1.0 starting"), "\(logged)")
        #expect(logged.contains("database=\(data)/keys.sqlite") && logged.contains("realm=north"), "\(logged)")
        #expect(logged.contains("kek.primary=\(primary)") && logged.contains("tls=off"), "\(logged)")
        #expect(!logged.contains("a passphrase for the tests' KEK"))
    }
}
#endif
