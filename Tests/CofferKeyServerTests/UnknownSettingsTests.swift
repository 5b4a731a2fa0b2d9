#if Server
import Foundation
import Testing

/// A setting the server does not know, in the configuration file (nested
/// or dotted) or the environment, is refused before anything is opened or
/// made, with the nearest name it knows (operator trial 4: `"databse"` sent
/// a replica to a new local database with a new KEK ring).
@Suite struct UnknownSettingsTests {
    @Test func aMisspeltSettingIsRefusedAndNothingIsMade() throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        for (name, settings, says) in [
            (
                "top", ["databse": "x.sqlite"] as [String: Any],
                #"sets "databse", which is not a setting; did you mean database?"#
            ),
            (
                "nested", ["jwks": ["urll": "https://issuer.example/jwks"]],
                #"sets "jwks.urll", which is not a setting; did you mean jwks.url?"#
            ),
            ("dotted", ["kek.passphrase.fille": "pw"], "did you mean kek.passphrase.file?"),
            ("far", ["colour": "blue"], #"sets "colour", which is not a setting (docs/key-server.md"#),
        ] {
            let config = issuer.folder + "/\(name).json"
            try JSONSerialization.data(withJSONObject: settings).write(to: URL(fileURLWithPath: config))
            let (status, said) = try serverRefusal(
                [
                    "operator", "list", "--config", config, "--data", data, "--kek-passphrase-file",
                    issuer.folder + "/kek-passphrase",
                ])
            #expect(status == 64 && said.contains(says), "\(name): \(said)")
        }
        let run = try Spawned.run(
            ServerProcess.binary.path, ["operator", "list", "--data", data],
            environment: ["COFFER_SERVER_DATABSE": "x.sqlite"], output: .discard, errors: .capture)
        #expect(
            run.status == 64
                && run.errorText.contains(
                    "COFFER_SERVER_DATABSE is not a setting; did you mean COFFER_SERVER_DATABASE?"),
            "\(run.errorText)")
        // Nothing was made: no KEK ring, no database.
        #expect(!FileManager.default.fileExists(atPath: data))
    }
}
#endif
