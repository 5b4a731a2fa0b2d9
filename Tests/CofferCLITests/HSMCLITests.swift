import Foundation
import Testing

/// The command line's key rings and stores unlocked by an AES key inside a
/// PKCS#11 token (issue 59, part 1), with SoftHSM2 as the token: made by
/// `keyring new` / `store init` when absent, never extractable, and
/// nothing opens without the token.
@Suite struct HSMCLITests {
    static let module =
        ProcessInfo.processInfo.environment["COFFER_PKCS11_MODULE"] ?? "/usr/lib/softhsm/libsofthsm2.so"

    /// A token of the test's own, and the options that name it.
    static func token(_ directory: TemporaryDirectory) throws -> (options: [String], environment: [String: String]) {
        let folder = directory.url.path + "/hsm"
        try FileManager.default.createDirectory(atPath: folder + "/tokens", withIntermediateDirectories: true)
        try "directories.tokendir = \(folder)/tokens\nobjectstore.backend = file\nlog.level = ERROR\n".write(
            toFile: folder + "/softhsm2.conf", atomically: true, encoding: .utf8)
        let environment = ["SOFTHSM2_CONF": folder + "/softhsm2.conf"]
        let made = try CLI.run(
            "/usr/bin/softhsm2-util",
            ["--init-token", "--free", "--label", "cli", "--pin", "2468", "--so-pin", "1357"],
            environment: environment)
        #expect(made.status == 0, "softhsm2-util: \(made.stderr)")
        try directory.write("pin", Array("2468\n".utf8))
        return (
            [
                "--kek-pkcs11-module", module, "--kek-pkcs11-token", "cli", "--kek-pkcs11-key", "ring-kek",
                "--kek-pkcs11-pin-file", "pin",
            ], environment
        )
    }

    @Test func aKeyRingAndAStoreOpenWithTheTokenAndOnlyWithIt() throws {
        let directory = try TemporaryDirectory()
        let (hsm, environment) = try Self.token(directory)
        let run = { (arguments: [String]) throws -> CLI.Result in
            try CLI.coffer(arguments, in: directory.url, environment: environment)
        }
        var result = try run(["keyring", "new", "--keyring", "ring"] + hsm)
        #expect(result.status == 0 && result.stderr.contains("made the HSM key ring-kek"), "\(result.stderr)")
        try directory.write("secret", Array("the token".utf8))
        result = try run(["seal", "--keyring", "ring", "--context", "c", "-o", "v.bin", "secret"] + hsm)
        #expect(result.status == 0, "\(result.stderr)")
        result = try run(["open", "--keyring", "ring", "--context", "c", "v.bin"] + hsm)
        #expect(result.status == 0 && result.stdoutText == "the token", "\(result.stderr)")

        // Without the token's key, or with a passphrase, nothing opens.
        try directory.write("pw", Array("guess\n".utf8))
        #expect(
            try run(["open", "--keyring", "ring", "--context", "c", "--passphrase-file", "pw", "v.bin"]).status != 0)
        var other = hsm
        other[5] = "no-such-key"
        result = try run(["open", "--keyring", "ring", "--context", "c", "v.bin"] + other)
        #expect(
            result.status != 0 && result.stderr.contains("holds no AES key labelled no-such-key"), "\(result.stderr)")
        try directory.write("wrong-pin", Array("1111\n".utf8))
        other = hsm
        other[7] = "wrong-pin"
        result = try run(["open", "--keyring", "ring", "--context", "c", "v.bin"] + other)
        #expect(
            result.status != 0 && result.stderr.contains("the PIN for PKCS#11 token cli is wrong"), "\(result.stderr)")
        // The options go together.
        #expect(try run(["keyring", "list", "--keyring", "ring"] + Array(hsm.prefix(4))).status == 64)

        // A store under the same kind of key, made by store init.
        try directory.write(
            "schema.json",
            Array(
                #"{"tables": [{"name": "notes", "primaryKey": "id", "fields": [{"name": "id", "type": "integer"}, {"name": "body", "type": "text", "sealed": true}]}]}"#
                    .utf8))
        var store = hsm
        store[5] = "store-kek"
        result = try run(["store", "init", "--db", "s.sqlite", "--schema", "schema.json"] + store)
        #expect(result.status == 0 && result.stderr.contains("made the HSM key store-kek"), "\(result.stderr)")
        result = try CLI.coffer(
            ["store", "put", "--db", "s.sqlite", "--table", "notes"] + store,
            stdin: Array(#"{"body": "under the token"}"#.utf8), in: directory.url, environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        result = try run(["store", "get", "--db", "s.sqlite", "--table", "notes", "--id", "1"] + store)
        #expect(result.status == 0 && result.stdoutText.contains("under the token"), "\(result.stderr)")
        #expect(try run(["store", "get", "--db", "s.sqlite", "--table", "notes", "--id", "1"] + hsm).status != 0)
    }
}
