import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Key rings from the command line: concurrent changes lose nothing, a
/// `kill -9` never leaves a broken key ring, and the whole life cycle
/// (seal, rotate, rewrap, disable, passwd) behaves as documented.
@Suite(.serialized) struct KeyRingCLITests {
    static func ok(_ result: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            result.status == 0, "\(what) failed (\(result.status)): \(result.stderr)", sourceLocation: sourceLocation)
    }

    /// A KEK file keeps these fast (no scrypt per process).
    static func setUp() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        try directory.write("kek", (0..<32).map { UInt8($0 * 5 & 0xff) })
        ok(
            try CLI.coffer(["keyring", "new", "--keyring", "ring", "--kek-file", "kek"], in: directory.url),
            "keyring new")
        return directory
    }

    static func keyCount(_ directory: TemporaryDirectory) throws -> Int {
        let list = try CLI.coffer(["keyring", "list", "--keyring", "ring", "--kek-file", "kek"], in: directory.url)
        ok(list, "keyring list")
        return list.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }.count
    }

    /// Eight processes rotate the same key ring at once: all eight new keys
    /// are there afterwards (each read-modify-write holds the lock).
    @Test func concurrentRotationsLoseNothing() throws {
        let directory = try Self.setUp()
        let processes = try (0..<8).map { _ -> Process in
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments = ["keyring", "rotate", "--keyring", "ring", "--kek-file", "kek"]
            process.currentDirectoryURL = directory.url
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        for process in processes {
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        #expect(try Self.keyCount(directory) == 9)
    }

    /// `kill -9` at growing delays during rotations: the key ring always
    /// opens, and holds every key whose rotation was acknowledged (exit 0).
    @Test func killNineDuringRotation() throws {
        let directory = try Self.setUp()
        var acknowledged = 1
        var killed = 0
        for round in 0..<30 {
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments = ["keyring", "rotate", "--keyring", "ring", "--kek-file", "kek"]
            process.currentDirectoryURL = directory.url
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(useconds_t(round * 6000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            if process.terminationReason == .exit && process.terminationStatus == 0 {
                acknowledged += 1
            } else {
                killed += 1
            }
            let count = try Self.keyCount(directory)
            // A killed rotation may or may not have landed; an acknowledged one must have.
            #expect(count >= acknowledged && count <= round + 2)
            acknowledged = count
        }
        print("key ring kill -9 rounds: 30, killed \(killed)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter {
            $0.contains(".coffer-")
        }
        print("temporary files left by kill -9: \(leftovers.count)")
    }

    @Test func lifeCycle() throws {
        let directory = try TemporaryDirectory()
        try directory.write("pw", Array("first passphrase\n".utf8))
        try directory.write("pw2", Array("second passphrase\n".utf8))
        try directory.write("secret", Array("the token".utf8))
        let dir = directory.url
        Self.ok(
            try CLI.coffer(
                ["keyring", "new", "--keyring", "ring", "--passphrase-file", "pw", "--kdf", "pbkdf2"], in: dir), "new")
        #expect(
            try CLI.coffer(["keyring", "new", "--keyring", "ring", "--passphrase-file", "pw"], in: dir).status == 6)
        Self.ok(
            try CLI.coffer(
                [
                    "seal", "--keyring", "ring", "--passphrase-file", "pw", "--context", "users/7", "-o", "v.bin",
                    "secret",
                ], in: dir), "seal")
        Self.ok(
            try CLI.coffer(
                [
                    "seal", "--keyring", "ring", "--passphrase-file", "pw", "--context", "users/7", "--text", "-o",
                    "v.txt", "secret",
                ], in: dir), "seal --text")
        #expect(try directory.read("v.bin").count == 9 + 33)
        for value in ["v.bin", "v.txt"] {
            let opened = try CLI.coffer(
                ["open", "--keyring", "ring", "--passphrase-file", "pw", "--context", "users/7", value], in: dir)
            Self.ok(opened, "open \(value)")
            #expect(opened.stdoutText == "the token")
            #expect(
                try CLI.coffer(
                    ["open", "--keyring", "ring", "--passphrase-file", "pw", "--context", "users/8", value], in: dir
                ).status == 3)
        }
        let oldKey = try CLI.coffer(["keyring", "list", "--keyring", "ring", "--passphrase-file", "pw"], in: dir)
            .stdoutText.prefix(8)
        Self.ok(
            try CLI.coffer(["keyring", "rotate", "--keyring", "ring", "--passphrase-file", "pw"], in: dir), "rotate")
        Self.ok(
            try CLI.coffer(
                [
                    "rewrap", "--keyring", "ring", "--passphrase-file", "pw", "--context", "users/7", "-o", "w.txt",
                    "v.txt",
                ], in: dir), "rewrap")
        #expect(String(decoding: try directory.read("w.txt"), as: UTF8.self).hasPrefix("cs1."))
        Self.ok(
            try CLI.coffer(
                ["keyring", "disable", "--keyring", "ring", "--passphrase-file", "pw", String(oldKey)], in: dir),
            "disable")
        let disabled = try CLI.coffer(
            ["open", "--keyring", "ring", "--passphrase-file", "pw", "--context", "users/7", "v.txt"], in: dir)
        #expect(disabled.status == 6 && disabled.stderr.contains("disabled"))
        // Enabled again, it opens; enabling it twice is refused with a reason.
        Self.ok(
            try CLI.coffer(
                ["keyring", "enable", "--keyring", "ring", "--passphrase-file", "pw", String(oldKey)], in: dir),
            "enable")
        let reopened = try CLI.coffer(
            ["open", "--keyring", "ring", "--passphrase-file", "pw", "--context", "users/7", "v.txt"], in: dir)
        #expect(reopened.stdoutText == "the token")
        let twice = try CLI.coffer(
            ["keyring", "enable", "--keyring", "ring", "--passphrase-file", "pw", String(oldKey)], in: dir)
        #expect(twice.status != 0 && twice.stderr.contains("only a disabled key can be enabled"), "\(twice.stderr)")
        Self.ok(
            try CLI.coffer(
                ["keyring", "disable", "--keyring", "ring", "--passphrase-file", "pw", String(oldKey)], in: dir),
            "disable again")
        Self.ok(
            try CLI.coffer(
                ["keyring", "passwd", "--keyring", "ring", "--passphrase-file", "pw", "--new-passphrase-file", "pw2"],
                in: dir), "passwd")
        let wrong = try CLI.coffer(
            ["open", "--keyring", "ring", "--passphrase-file", "pw", "--context", "users/7", "w.txt"], in: dir)
        #expect(wrong.status == 2 && wrong.stderr.contains("wrong password"))
        let opened = try CLI.coffer(
            ["open", "--keyring", "ring", "--passphrase-file", "pw2", "--context", "users/7", "w.txt"], in: dir)
        #expect(opened.stdoutText == "the token")
        // The key ring file is private.
        #expect(
            try FileManager.default.attributesOfItem(atPath: directory.path("ring"))[.posixPermissions] as? Int == 0o600
        )
    }
}

extension KeyRingCLITests {
    /// A key ring sealed under a KEK kept in a keychain (issue 5's third
    /// KEK source): `keyring new` makes the symmetric256 key when it is
    /// missing; seal and open find it by tag; without it nothing opens.
    @Test func kekFromKeychain() throws {
        let directory = try TemporaryDirectory()
        chmod(directory.url.path, 0o700)
        let dir = directory.url
        try directory.write("chainkey", (0..<32).map { UInt8($0 * 7 & 0xff) })
        try directory.write("secret", Array("kept by the keychain".utf8))
        let environment = ["COFFER_KEYCHAIN_DIR": directory.path("chains")]
        Self.ok(
            try CLI.coffer(["keychain", "create", "--key-file", directory.path("chainkey")], environment: environment),
            "keychain create")
        let kek = [
            "--kek-keychain", "default", "--kek-tag", "rings/main", "--kek-keychain-key-file",
            directory.path("chainkey"),
        ]
        Self.ok(
            try CLI.coffer(["keyring", "new", "--keyring", "ring"] + kek, in: dir, environment: environment),
            "keyring new")
        let listed = try CLI.coffer(
            ["keychain", "list", "--key-file", directory.path("chainkey")], environment: environment)
        #expect(listed.stdoutText.contains("tag=rings/main  type=symmetric256"))
        Self.ok(
            try CLI.coffer(["keyring", "rotate", "--keyring", "ring"] + kek, in: dir, environment: environment),
            "rotate")
        Self.ok(
            try CLI.coffer(
                ["seal", "--keyring", "ring", "--context", "c", "-o", "v", "secret"] + kek, in: dir,
                environment: environment), "seal")
        let opened = try CLI.coffer(
            ["open", "--keyring", "ring", "--context", "c", "v"] + kek, in: dir, environment: environment)
        #expect(opened.status == 0 && opened.stdoutText == "kept by the keychain", "\(opened.stderr)")

        // Another tag, or no keychain KEK at all: nothing opens.
        let otherTag = [
            "--kek-keychain", "default", "--kek-tag", "rings/other", "--kek-keychain-key-file",
            directory.path("chainkey"),
        ]
        let missing = try CLI.coffer(
            ["open", "--keyring", "ring", "--context", "c", "v"] + otherTag, in: dir, environment: environment)
        #expect(missing.status == 2 && missing.stderr.contains("no symmetric256 key tagged rings/other"))
        try directory.write("wrongkek", [UInt8](repeating: 9, count: 32))
        #expect(
            try CLI.coffer(["open", "--keyring", "ring", "--context", "c", "--kek-file", "wrongkek", "v"], in: dir)
                .status == 2)
        #expect(
            try CLI.coffer(
                [
                    "keyring", "list", "--keyring", "ring", "--kek-file", "wrongkek", "--kek-keychain", "default",
                    "--kek-tag", "x",
                ], in: dir
            ).status == 64)

        // passwd moves the ring off the keychain KEK and onto another one.
        try directory.write("kek2", [UInt8](repeating: 2, count: 32))
        Self.ok(
            try CLI.coffer(
                ["keyring", "passwd", "--keyring", "ring", "--new-kek-file", "kek2"] + kek, in: dir,
                environment: environment), "passwd to a file")
        #expect(
            try CLI.coffer(
                ["open", "--keyring", "ring", "--context", "c", "v"] + kek, in: dir, environment: environment
            ).status == 2)
        Self.ok(
            try CLI.coffer(
                [
                    "keyring", "passwd", "--keyring", "ring", "--kek-file", "kek2", "--new-kek-keychain", "default",
                    "--new-kek-tag", "rings/next",
                    "--new-kek-keychain-key-file", directory.path("chainkey"),
                ], in: dir, environment: environment), "passwd to the keychain")
        let next = [
            "--kek-keychain", "default", "--kek-tag", "rings/next", "--kek-keychain-key-file",
            directory.path("chainkey"),
        ]
        #expect(
            try CLI.coffer(
                ["open", "--keyring", "ring", "--context", "c", "v"] + next, in: dir, environment: environment
            ).stdoutText == "kept by the keychain")
    }
}
