import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Regression tests for the security review of 0e8880c
/// (../shared/reviews/security-review.md), one or more per finding, named
/// after it. Each failed on 0e8880c.
@Suite(.serialized) struct TrustDefectCLITests {
    static func ok(_ result: CLI.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            result.status == 0, "\(what) failed (\(result.status)): \(result.stderr)", sourceLocation: sourceLocation)
    }

    static var isRoot: Bool { geteuid() == 0 }
    /// The null device's numbers, major 1 minor 3 (glibc's makedev encoding).
    static let nullDevice: dev_t = (1 << 8) | 3
    static let reviewRepro = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/reviews/repro")
    static let python = CLI.packageRoot.appendingPathComponent(".venv/bin/python").path

    /// A folder with an identity, its recipient and an encrypted file
    /// (`x.age`, holding `plain`), and its own rollback state.
    static func encrypted(_ plain: [UInt8] = Array("the plaintext\n".utf8)) throws -> (TemporaryDirectory, String) {
        let directory = try TemporaryDirectory()
        let keygen = try CLI.coffer(["keygen", "-o", "id.txt"], in: directory.url)
        ok(keygen, "keygen")
        let recipient = String(
            keygen.stderr.split(separator: " ").last!.trimmingCharacters(in: .whitespacesAndNewlines))
        try directory.write("plain", plain)
        ok(try CLI.coffer(["encrypt", "-r", recipient, "-o", "x.age", "plain"], in: directory.url), "encrypt")
        return (directory, recipient)
    }

    static func state(_ directory: TemporaryDirectory) -> [String: String] {
        ["COFFER_STATE_DIR": directory.path("state")]
    }

    static func fileType(_ path: String) -> mode_t {
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        return info.st_mode & S_IFMT
    }

    /// Runs `command` with /bin/sh as an unprivileged user when we are
    /// root (setpriv to nobody), else as ourselves.
    static func shell(_ command: String, in directory: TemporaryDirectory, unprivileged: Bool) throws -> CLI.Result {
        if unprivileged && isRoot {
            chmod(directory.url.path, 0o777)
            return try CLI.run(
                "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", command],
                in: directory.url, environment: ["HOME": directory.url.path])
        }
        return try CLI.run("/bin/sh", ["-c", command], in: directory.url)
    }

    // MARK: F5 — outputs write through devices, FIFOs, descriptors and symlinks

    /// As root: a character device made with mknod (the null device's
    /// numbers) stays a device after `decrypt -o` and `encrypt -o`.
    @Test func F5_deviceNodeStaysADeviceAsRoot() throws {
        guard Self.isRoot else { return }  // mknod needs root; the unprivileged cases run below
        let (directory, recipient) = try Self.encrypted()
        #expect(mknod(directory.path("devnull"), S_IFCHR | 0o666, Self.nullDevice) == 0)
        Self.ok(
            try CLI.coffer(["decrypt", "-i", "id.txt", "-o", "devnull", "x.age"], in: directory.url),
            "decrypt -o devnull")
        Self.ok(
            try CLI.coffer(["encrypt", "-r", recipient, "-o", "devnull", "plain"], in: directory.url),
            "encrypt -o devnull")
        #expect(Self.fileType(directory.path("devnull")) == S_IFCHR)
        var info = stat()
        #expect(lstat(directory.path("devnull"), &info) == 0 && info.st_rdev == Self.nullDevice)
        // Nothing was left beside it either.
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(!names.contains { $0.contains(".coffer-") }, "\(names)")
    }

    /// As an unprivileged user (nobody, when the tests run as root):
    /// `-o /dev/stdout`, `-o /dev/fd/3` and `-o /dev/stderr` deliver the plaintext.
    @Test func F5_descriptorPathsWorkUnprivileged() throws {
        let (directory, _) = try Self.encrypted()
        chmod(directory.path("id.txt"), 0o600)
        if Self.isRoot {
            for name in ["id.txt", "x.age"] { chown(directory.path(name), 65534, 65534) }
        }
        let binary = CLI.binary.path
        let toStdout = try Self.shell(
            "'\(binary)' decrypt -i id.txt -o /dev/stdout x.age", in: directory, unprivileged: true)
        Self.ok(toStdout, "-o /dev/stdout")
        #expect(toStdout.stdoutText == "the plaintext\n")
        let toFD = try Self.shell(
            "'\(binary)' decrypt -i id.txt -o /dev/fd/3 x.age 3>&1 1>/dev/null", in: directory, unprivileged: true)
        Self.ok(toFD, "-o /dev/fd/3")
        #expect(toFD.stdoutText == "the plaintext\n")
        // Appending through a descriptor keeps what was there (no O_TRUNC, no rename).
        let append = try Self.shell(
            "echo first > log; '\(binary)' decrypt -i id.txt -o /dev/fd/4 x.age 4>>log; cat log", in: directory,
            unprivileged: true)
        Self.ok(append, "-o /dev/fd/4 in append mode")
        #expect(append.stdoutText == "first\nthe plaintext\n")
    }

    /// A named pipe stays a pipe, and the reader at its other end gets the plaintext.
    @Test func F5_namedPipeStaysAPipe() throws {
        let (directory, _) = try Self.encrypted()
        #expect(mkfifo(directory.path("pipe"), 0o600) == 0)
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/sh")
        reader.arguments = ["-c", "cat pipe > received"]
        reader.currentDirectoryURL = directory.url
        try reader.run()
        Self.ok(
            try CLI.coffer(["decrypt", "-i", "id.txt", "-o", "pipe", "x.age"], in: directory.url), "decrypt -o pipe")
        reader.waitUntilExit()
        #expect(try directory.read("received") == Array("the plaintext\n".utf8))
        #expect(Self.fileType(directory.path("pipe")) == S_IFIFO)
    }

    /// `rekey -o link.age link.age` rewrites the link's target and keeps the link.
    @Test func F5_rekeyThroughASymlinkRewritesTheTarget() throws {
        let (directory, _) = try Self.encrypted()
        try FileManager.default.createDirectory(atPath: directory.path("real"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: directory.path("x.age"), toPath: directory.path("real/shared.age"))
        try FileManager.default.createSymbolicLink(
            atPath: directory.path("link.age"), withDestinationPath: "real/shared.age")
        let second = try CLI.coffer(["keygen", "-o", "id2.txt"], in: directory.url)
        let recipient2 = String(
            second.stderr.split(separator: " ").last!.trimmingCharacters(in: .whitespacesAndNewlines))
        Self.ok(
            try CLI.coffer(
                ["rekey", "-i", "id.txt", "-r", recipient2, "-o", "link.age", "link.age"], in: directory.url), "rekey")
        #expect(Self.fileType(directory.path("link.age")) == S_IFLNK)
        // The real file now opens with the new key only.
        Self.ok(
            try CLI.coffer(["decrypt", "-i", "id2.txt", "real/shared.age"], in: directory.url),
            "decrypt with the new key")
        #expect(try CLI.coffer(["decrypt", "-i", "id.txt", "real/shared.age"], in: directory.url).status == 2)
    }

    /// Rotating and disabling through a symlink changes the one real ring,
    /// and the lock is taken beside the target.
    @Test func F5_keyRingThroughASymlinkNeverForks() throws {
        let directory = try TemporaryDirectory()
        try directory.write("kek", [UInt8](repeating: 9, count: 32))
        try FileManager.default.createDirectory(atPath: directory.path("real"), withIntermediateDirectories: true)
        let env = Self.state(directory)
        Self.ok(
            try CLI.coffer(
                ["keyring", "new", "--keyring", "real/ring.ckr", "--kek-file", "kek"], in: directory.url,
                environment: env), "new")
        try FileManager.default.createSymbolicLink(
            atPath: directory.path("ring-link.ckr"), withDestinationPath: "real/ring.ckr")
        let first = try CLI.coffer(
            ["keyring", "list", "--keyring", "real/ring.ckr", "--kek-file", "kek"], in: directory.url, environment: env)
        let oldPrimary = String(first.stdoutText.prefix(8))
        Self.ok(
            try CLI.coffer(
                ["keyring", "rotate", "--keyring", "ring-link.ckr", "--kek-file", "kek"], in: directory.url,
                environment: env), "rotate")
        Self.ok(
            try CLI.coffer(
                ["keyring", "disable", "--keyring", "ring-link.ckr", "--kek-file", "kek", oldPrimary],
                in: directory.url, environment: env), "disable")
        #expect(Self.fileType(directory.path("ring-link.ckr")) == S_IFLNK)
        let list = try CLI.coffer(
            ["keyring", "list", "--keyring", "real/ring.ckr", "--kek-file", "kek"], in: directory.url, environment: env)
        #expect(list.stdoutText.contains("\(oldPrimary)  disabled"), "\(list.stdoutText)")
        #expect(directory.exists("real/.ring.ckr.lock"))
        #expect(!directory.exists(".ring-link.ckr.lock"))
    }

    // MARK: F1, F3 — a passphrase change ends a compromise

    /// The reviewer's attack: the old copy's slot and the old passphrase
    /// give the old data key, which must not open the file written after
    /// `keychain passwd`.
    @Test func F1_passphraseChangeRotatesTheDataKey() throws {
        let directory = try TemporaryDirectory()
        try directory.write("oldpw", Array("old passphrase".utf8))
        try directory.write("newpw", Array("new passphrase".utf8))
        let env = ["COFFER_KEYCHAIN_DIR": directory.path("kc")].merging(Self.state(directory)) { $1 }
        func coffer(_ arguments: [String], stdin: [UInt8] = []) throws -> CLI.Result {
            try CLI.coffer(arguments, stdin: stdin, in: directory.url, environment: env)
        }
        Self.ok(try coffer(["keychain", "create", "--keychain", "k", "--passphrase-file", "oldpw"]), "create")
        Self.ok(
            try coffer(
                [
                    "keychain", "add-password", "--keychain", "k", "--passphrase-file", "oldpw", "--service", "s",
                    "--account", "before",
                ],
                stdin: Array("secret-before".utf8)), "add before")
        try FileManager.default.copyItem(
            atPath: directory.path("kc/k.keychain"), toPath: directory.path("old-copy.keychain"))
        Self.ok(
            try coffer([
                "keychain", "passwd", "--keychain", "k", "--passphrase-file", "oldpw", "--new-passphrase-file", "newpw",
            ]), "passwd")
        Self.ok(
            try coffer(
                [
                    "keychain", "add-password", "--keychain", "k", "--passphrase-file", "newpw", "--service", "s",
                    "--account", "after",
                ],
                stdin: Array("secret-added-after-passwd-change".utf8)), "add after")
        // The reviewer's kcattack.py, redone for keychain version 2 (key
        // slots): it reads the old copy with the old passphrase, then fails
        // on the new file.
        let attack = try CLI.run(
            Self.python,
            [
                CLI.packageRoot.appendingPathComponent("Tests/CofferCLITests/Peers/kcattack_v2.py").path,
                directory.path("old-copy.keychain"), directory.path("kc/k.keychain"), directory.path("oldpw"),
            ])
        #expect(attack.stdoutText.contains("old copy: before => secret-before"), "\(attack.stderr)")
        #expect(attack.status != 0, "the old data key still opens the new file: \(attack.stdoutText)")
        #expect(!attack.stdoutText.contains("secret-added-after"))
        #expect(attack.stderr.contains("InvalidTag"), "\(attack.stderr)")
    }

    /// An old copy of the ring and the old passphrase do not open a value
    /// sealed after `keyring passwd` (the value names a key the old copy lacks).
    @Test func F3_keyRingPasswdAddsANewPrimary() throws {
        let directory = try TemporaryDirectory()
        try directory.write("pw1", Array("first passphrase".utf8))
        try directory.write("pw2", Array("second passphrase".utf8))
        let env = Self.state(directory)
        func coffer(_ arguments: [String], stdin: [UInt8] = []) throws -> CLI.Result {
            try CLI.coffer(arguments, stdin: stdin, in: directory.url, environment: env)
        }
        Self.ok(try coffer(["keyring", "new", "--keyring", "pwring.ckr", "--passphrase-file", "pw1"]), "new")
        try FileManager.default.copyItem(atPath: directory.path("pwring.ckr"), toPath: directory.path("pwring.old"))
        Self.ok(
            try coffer(
                [
                    "seal", "--keyring", "pwring.ckr", "--passphrase-file", "pw1", "--context", "c", "--text", "-o",
                    "before.txt",
                ],
                stdin: Array("sealed-before".utf8)), "seal before")
        Self.ok(
            try coffer([
                "keyring", "passwd", "--keyring", "pwring.ckr", "--passphrase-file", "pw1", "--new-passphrase-file",
                "pw2",
            ]), "passwd")
        Self.ok(
            try coffer(
                [
                    "seal", "--keyring", "pwring.ckr", "--passphrase-file", "pw2", "--context", "c", "--text", "-o",
                    "after.txt",
                ],
                stdin: Array("sealed-after-passwd-change".utf8)), "seal after")
        // The thief opens the old copy on their own machine (no rollback mark there).
        let stolen = try CLI.coffer(
            ["open", "--keyring", "pwring.old", "--passphrase-file", "pw1", "--context", "c", "after.txt"],
            in: directory.url, environment: ["COFFER_STATE_DIR": directory.path("thief-state")])
        #expect(stolen.status == 2, "\(stolen.stdoutText) \(stolen.stderr)")
        #expect(!stolen.stdoutText.contains("sealed-after"))
        // The new ring still opens what was sealed before the change.
        let before = try coffer([
            "open", "--keyring", "pwring.ckr", "--passphrase-file", "pw2", "--context", "c", "before.txt",
        ])
        #expect(before.stdoutText == "sealed-before")
    }

    // MARK: F4 — no silent rollback; keys can be destroyed

    /// The reviewer's rollback: a snapshot taken before `disable` is put
    /// back; opening with it is `rolledBack` (exit 3) until accepted on purpose.
    @Test func F4_rolledBackKeyRingIsRefused() throws {
        let directory = try TemporaryDirectory()
        try directory.write("kek", [UInt8](repeating: 3, count: 32))
        let env = Self.state(directory)
        func coffer(_ arguments: [String], stdin: [UInt8] = []) throws -> CLI.Result {
            try CLI.coffer(arguments, stdin: stdin, in: directory.url, environment: env)
        }
        let unlock = ["--keyring", "ring.ckr", "--kek-file", "kek"]
        Self.ok(try coffer(["keyring", "new"] + unlock), "new")
        Self.ok(
            try coffer(
                ["seal", "--context", "c", "--text", "-o", "v1.txt"] + unlock, stdin: Array("forged-by-attacker".utf8)),
            "seal")
        let k1 = String(try coffer(["keyring", "list"] + unlock).stdoutText.prefix(8))
        Self.ok(try coffer(["keyring", "rotate"] + unlock), "rotate")
        try FileManager.default.copyItem(atPath: directory.path("ring.ckr"), toPath: directory.path("ring.snapshot"))
        Self.ok(try coffer(["keyring", "disable"] + unlock + [k1]), "disable")
        #expect(try coffer(["open", "--context", "c", "v1.txt"] + unlock).status == 6)
        try FileManager.default.removeItem(atPath: directory.path("ring.ckr"))
        try FileManager.default.copyItem(atPath: directory.path("ring.snapshot"), toPath: directory.path("ring.ckr"))
        let rolledBack = try coffer(["open", "--context", "c", "v1.txt"] + unlock)
        #expect(rolledBack.status == 3, "\(rolledBack.stderr)")
        #expect(rolledBack.stderr.contains("older copy"))
        #expect(!rolledBack.stdoutText.contains("forged"))
        #expect(try coffer(["keyring", "rotate"] + unlock).status == 3)
        // Accepted on purpose, the older copy is the ring again.
        Self.ok(try coffer(["keyring", "accept-rollback"] + unlock), "accept-rollback")
        Self.ok(try coffer(["open", "--context", "c", "v1.txt"] + unlock), "open after accept-rollback")
    }

    /// With the KEK in a keychain, the mark is kept beside the KEK.
    @Test func F4_markLivesBesideAKeychainKEK() throws {
        let directory = try TemporaryDirectory()
        try directory.write("kcpw", Array("keychain passphrase".utf8))
        let env = ["COFFER_KEYCHAIN_DIR": directory.path("kc")].merging(Self.state(directory)) { $1 }
        func coffer(_ arguments: [String]) throws -> CLI.Result {
            try CLI.coffer(arguments, in: directory.url, environment: env)
        }
        Self.ok(
            try coffer(["keychain", "create", "--keychain", "keys", "--passphrase-file", "kcpw"]), "keychain create")
        let unlock = [
            "--keyring", "ring.ckr", "--kek-keychain", "keys", "--kek-tag", "kek", "--kek-keychain-passphrase-file",
            "kcpw",
        ]
        Self.ok(try coffer(["keyring", "new"] + unlock), "new")
        try FileManager.default.copyItem(atPath: directory.path("ring.ckr"), toPath: directory.path("ring.old"))
        Self.ok(try coffer(["keyring", "rotate"] + unlock), "rotate")
        let list = try coffer(["keychain", "list", "--keychain", "keys", "--passphrase-file", "kcpw"])
        #expect(list.stdoutText.contains("service=org.coffer.rollback-guard"), "\(list.stdoutText)")
        let state = (try? String(contentsOfFile: directory.path("state/generations"), encoding: .utf8)) ?? ""
        #expect(!state.contains("keyring:"), "\(state)")
        try FileManager.default.removeItem(atPath: directory.path("ring.ckr"))
        try FileManager.default.copyItem(atPath: directory.path("ring.old"), toPath: directory.path("ring.ckr"))
        #expect(try coffer(["keyring", "list"] + unlock).status == 3)
    }

    /// A keychain file put back from an older copy is `rolledBack`.
    @Test func F4_rolledBackKeychainIsRefused() throws {
        let directory = try TemporaryDirectory()
        try directory.write("key", [UInt8](repeating: 5, count: 32))
        let env = ["COFFER_KEYCHAIN_DIR": directory.path("kc")].merging(Self.state(directory)) { $1 }
        func coffer(_ arguments: [String], stdin: [UInt8] = []) throws -> CLI.Result {
            try CLI.coffer(arguments, stdin: stdin, in: directory.url, environment: env)
        }
        let unlock = ["--keychain", "k", "--key-file", "key"]
        Self.ok(try coffer(["keychain", "create"] + unlock), "create")
        Self.ok(
            try coffer(
                ["keychain", "add-password", "--service", "s", "--account", "a"] + unlock, stdin: Array("one".utf8)),
            "add")
        try FileManager.default.copyItem(
            atPath: directory.path("kc/k.keychain"), toPath: directory.path("old.keychain"))
        Self.ok(
            try coffer(
                ["keychain", "update-password", "--service", "s", "--account", "a"] + unlock, stdin: Array("two".utf8)),
            "update")
        try FileManager.default.removeItem(atPath: directory.path("kc/k.keychain"))
        try FileManager.default.copyItem(
            atPath: directory.path("old.keychain"), toPath: directory.path("kc/k.keychain"))
        let read = try coffer(["keychain", "get-password", "--service", "s", "--account", "a"] + unlock)
        #expect(read.status == 3, "\(read.stdoutText) \(read.stderr)")
        #expect(read.stderr.contains("older copy"))
        Self.ok(try coffer(["keychain", "accept-rollback"] + unlock), "accept-rollback")
        #expect(
            try coffer(["keychain", "get-password", "--service", "s", "--account", "a"] + unlock).stdoutText == "one")
    }

    /// `keyring destroy`: only a disabled key, only when the caller says no
    /// value remains (or forces it); afterwards its values never open.
    @Test func F4_destroyRemovesADisabledKey() throws {
        let directory = try TemporaryDirectory()
        try directory.write("kek", [UInt8](repeating: 4, count: 32))
        let env = Self.state(directory)
        func coffer(_ arguments: [String], stdin: [UInt8] = []) throws -> CLI.Result {
            try CLI.coffer(arguments, stdin: stdin, in: directory.url, environment: env)
        }
        let unlock = ["--keyring", "ring.ckr", "--kek-file", "kek"]
        Self.ok(try coffer(["keyring", "new"] + unlock), "new")
        Self.ok(
            try coffer(["seal", "--context", "c", "-o", "old.bin"] + unlock, stdin: Array("old value".utf8)), "seal")
        let k1 = String(try coffer(["keyring", "list"] + unlock).stdoutText.prefix(8))
        Self.ok(try coffer(["keyring", "rotate"] + unlock), "rotate")
        #expect(try coffer(["keyring", "destroy"] + unlock + [k1]).status == 64)  // still active
        Self.ok(try coffer(["keyring", "disable"] + unlock + [k1]), "disable")
        let refused = try coffer(["keyring", "destroy"] + unlock + [k1])
        #expect(refused.status == 6 && refused.stderr.contains("--no-values-remain"), "\(refused.stderr)")
        Self.ok(try coffer(["keyring", "destroy", "--no-values-remain"] + unlock + [k1]), "destroy")
        #expect(!(try coffer(["keyring", "list"] + unlock).stdoutText.contains(k1)))
        #expect(try coffer(["open", "--context", "c", "old.bin"] + unlock).status == 2)
    }

    // MARK: F6 — memory bounded by the chunk size

    /// The reviewer's hostile armor (CRLF only where LF would end a line on
    /// a 4 KiB boundary) over an 80 MiB file: `inspect` and `decrypt` stay
    /// under 64 MiB of peak RSS, measured by the kernel (ru_maxrss).
    @Test func F6_hostileArmorStaysUnder64MiB() throws {
        let (directory, recipient) = try Self.encrypted()
        Self.ok(try CLI.run("/bin/sh", ["-c", "head -c 83886080 /dev/urandom > big"], in: directory.url), "make big")
        Self.ok(
            try CLI.coffer(["encrypt", "-a", "-r", recipient, "-o", "big.age.asc", "big"], in: directory.url),
            "encrypt -a")
        Self.ok(
            try CLI.run(
                Self.python,
                [
                    Self.reviewRepro.appendingPathComponent("crlfmix.py").path, directory.path("big.age.asc"),
                    directory.path("hostile.asc"),
                ]),
            "crlfmix.py")
        let measure = """
            import resource, subprocess, sys
            code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
            print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
            """
        for arguments in [["inspect", "hostile.asc"], ["decrypt", "-i", "id.txt", "-o", "out", "hostile.asc"]] {
            let result = try CLI.run(Self.python, ["-c", measure, CLI.binary.path] + arguments, in: directory.url)
            let fields = result.stdoutText.split(separator: " ").map {
                Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            }
            #expect(fields.first == 0, "\(arguments): \(result.stdoutText) \(result.stderr)")
            let peakKiB = fields.last ?? .max
            #expect(peakKiB > 0 && peakKiB < 64 << 10, "\(arguments[0]) peaked at \(peakKiB) KiB")
        }
        Self.ok(try CLI.run("/usr/bin/cmp", ["big", "out"], in: directory.url), "cmp big out")
    }

    // MARK: F8 — ownership and permissions where they are promised

    @Test func F8_openIdentityAndKeyRingFilesAreRefused() throws {
        let (directory, _) = try Self.encrypted()
        chmod(directory.path("id.txt"), 0o644)
        let open = try CLI.coffer(["decrypt", "-i", "id.txt", "x.age"], in: directory.url)
        #expect(open.status == 6, "\(open.stderr)")
        #expect(open.stderr.contains("open to other users") && open.stderr.contains("chmod 600"), "\(open.stderr)")
        try directory.write("kek", [UInt8](repeating: 1, count: 32))
        let env = Self.state(directory)
        Self.ok(
            try CLI.coffer(
                ["keyring", "new", "--keyring", "ring.ckr", "--kek-file", "kek"], in: directory.url, environment: env),
            "new")
        chmod(directory.path("ring.ckr"), 0o640)
        let ring = try CLI.coffer(
            ["keyring", "list", "--keyring", "ring.ckr", "--kek-file", "kek"], in: directory.url, environment: env)
        #expect(ring.status == 6 && ring.stderr.contains("open to other users"), "\(ring.stderr)")
        chmod(directory.path("kek"), 0o604)
        chmod(directory.path("ring.ckr"), 0o600)
        let kek = try CLI.coffer(
            ["keyring", "list", "--keyring", "ring.ckr", "--kek-file", "kek"], in: directory.url, environment: env)
        #expect(kek.status == 6, "\(kek.stderr)")
    }

    /// As root, a keychain folder or file owned by another user is refused.
    @Test func F8_keychainOwnedByAnotherUserIsRefused() throws {
        guard Self.isRoot else { return }  // chown needs root
        let directory = try TemporaryDirectory()
        try directory.write("key", [UInt8](repeating: 7, count: 32))
        let env = ["COFFER_KEYCHAIN_DIR": directory.path("kc2")].merging(Self.state(directory)) { $1 }
        Self.ok(
            try CLI.coffer(
                ["keychain", "create", "--keychain", "k", "--key-file", "key"], in: directory.url, environment: env),
            "create")
        chown(directory.path("kc2/k.keychain"), 65534, 65534)
        let file = try CLI.coffer(
            ["keychain", "list", "--keychain", "k", "--key-file", "key"], in: directory.url, environment: env)
        #expect(file.status == 6 && file.stderr.contains("another user"), "\(file.stderr)")
        chown(directory.path("kc2/k.keychain"), 0, 0)
        chown(directory.path("kc2"), 65534, 65534)
        let folder = try CLI.coffer(
            ["keychain", "add-password", "--keychain", "k", "--key-file", "key", "--service", "s", "--account", "a"],
            stdin: Array("x".utf8), in: directory.url, environment: env)
        #expect(folder.status == 6 && folder.stderr.contains("another user"), "\(folder.stderr)")
    }

    // MARK: F9, F14 — no plaintext temporary survives; the sweep is exact

    /// `decrypt -o` killed mid-write leaves no file beside the destination.
    ///
    /// The ciphertext goes in through a socket the test writes, so the kill
    /// never races the decryption: each run is given all but the end of the
    /// stream, and is killed only once its temporary holds plaintext, while it
    /// waits for bytes that will not come.
    @Test func F9_killNineLeavesNoPlaintextTemporary() throws {
        let (directory, recipient) = try Self.encrypted()
        Self.ok(try CLI.run("/bin/sh", ["-c", "head -c 8388608 /dev/urandom > big"], in: directory.url), "make big")
        Self.ok(try CLI.coffer(["encrypt", "-r", recipient, "-o", "big.age", "big"], in: directory.url), "encrypt")
        let ciphertext = try directory.read("big.age")
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: directory.url.path))
        for given in [ciphertext.count / 2, ciphertext.count - 1_000, ciphertext.count] {
            let decrypt = try FedDecrypt(in: directory)
            decrypt.give(ciphertext[..<given])
            if given < ciphertext.count {
                let written = decrypt.waitForPlaintextInItsTemporary()
                #expect(written > 0, "after \(given) bytes in, no plaintext reached a temporary")
                #expect(decrypt.process.isRunning, "decrypt ended without the end of its input")
                kill(decrypt.process.processIdentifier, SIGKILL)
            }
            decrypt.finish()
            let after = Set(try FileManager.default.contentsOfDirectory(atPath: directory.url.path))
            if given < ciphertext.count {
                #expect(decrypt.process.terminationReason == .uncaughtSignal)
                #expect(after == before, "left behind: \(after.subtracting(before))")
            } else {
                #expect(decrypt.process.terminationStatus == 0)
                #expect(after == before.union(["out"]), "left behind: \(after.subtracting(before))")
                #expect(try directory.read("out") == directory.read("big"))
            }
            try? FileManager.default.removeItem(atPath: directory.path("out"))
        }
    }

    /// `coffer decrypt -o out` reading its ciphertext from a socket the test
    /// writes with MSG_NOSIGNAL (a pipe would raise SIGPIPE in the test if
    /// the child ended first).
    final class FedDecrypt {
        let process = Process()
        let feed: Int32
        let directory: TemporaryDirectory

        init(in directory: TemporaryDirectory) throws {
            self.directory = directory
            var pair: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            feed = pair[0]
            process.executableURL = CLI.binary
            process.arguments = ["decrypt", "-i", "id.txt", "-o", "out"]
            process.currentDirectoryURL = directory.url
            process.standardInput = FileHandle(fileDescriptor: pair[1], closeOnDealloc: true)
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        /// Writes `bytes`; returns early if the child has stopped reading.
        func give(_ bytes: ArraySlice<UInt8>) {
            var offset = bytes.startIndex
            while offset < bytes.endIndex {
                let sent = bytes[offset...].withUnsafeBytes {
                    send(feed, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if sent < 0 && errno == EINTR { continue }
                if sent <= 0 { return }
                offset += sent
            }
        }

        /// The size of the child's open temporary in the destination's folder
        /// (an unnamed O_TMPFILE or a `.out.coffer-` file) once it is not
        /// empty, or 0 if none was within 60 s.
        func waitForPlaintextInItsTemporary() -> Int {
            let folder = directory.url.resolvingSymlinksInPath().path + "/"
            let fds = "/proc/\(process.processIdentifier)/fd"
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline && process.isRunning {
                for fd in (try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? [] {
                    guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fds)/\(fd)"),
                        target.hasPrefix(folder), target.hasSuffix(" (deleted)") || target.contains("/.out.coffer-")
                    else { continue }
                    var status = stat()
                    if stat("\(fds)/\(fd)", &status) == 0 && status.st_size > 0 { return Int(status.st_size) }
                }
                usleep(10_000)  // polling a condition with a deadline
            }
            return 0
        }

        /// Ends the input and waits for the child.
        func finish() {
            shutdown(feed, Int32(SHUT_WR))
            process.waitUntilExit()
            close(feed)
        }
    }

    /// Where a named temporary is used, a stale one (unlocked, old enough)
    /// is swept by the next write; a live one (its writer holds the lock)
    /// and names that only look alike are kept.
    @Test func F14_sweepRemovesOnlyProvablyStaleTemporariesOfItsOwnName() throws {
        let (directory, _) = try Self.encrypted()
        try directory.write(".out.coffer-0123456789ab", Array("stale".utf8))
        try directory.write(".out.coffer-live00000000", Array("not ours: wrong digits".utf8))
        try directory.write(".out.coffer-x.coffer-aaaaaaaaaaaa", Array("another destination's".utf8))
        try directory.write(".out.coffer-abcdefabcdef", Array("live".utf8))
        let live = open(directory.path(".out.coffer-abcdefabcdef"), O_RDONLY)
        #expect(flock(live, LOCK_EX | LOCK_NB) == 0)
        defer { close(live) }
        // All last written a minute ago; only the live one's writer holds its lock.
        for name in [
            ".out.coffer-0123456789ab", ".out.coffer-live00000000", ".out.coffer-x.coffer-aaaaaaaaaaaa",
            ".out.coffer-abcdefabcdef",
        ] {
            var old = [timespec(tv_sec: time(nil) - 60, tv_nsec: 0), timespec(tv_sec: time(nil) - 60, tv_nsec: 0)]
            utimensat(AT_FDCWD, directory.path(name), &old, 0)
        }
        Self.ok(try CLI.coffer(["decrypt", "-i", "id.txt", "-o", "out", "x.age"], in: directory.url), "decrypt")
        #expect(!directory.exists(".out.coffer-0123456789ab"))
        #expect(directory.exists(".out.coffer-abcdefabcdef"))
        #expect(directory.exists(".out.coffer-live00000000"))
        #expect(directory.exists(".out.coffer-x.coffer-aaaaaaaaaaaa"))
    }

    // MARK: F13 — rekey discards its output on a damaged payload

    @Test func F13_rekeyOfADamagedPayloadKeepsTheOldDestination() throws {
        let (directory, recipient) = try Self.encrypted(pattern(200_000))
        var bytes = try directory.read("x.age")
        bytes[bytes.count - 100] ^= 1
        try directory.write("damaged.age", bytes)
        try directory.write("dest.age", Array("previous".utf8))
        let result = try CLI.coffer(
            ["rekey", "-i", "id.txt", "-r", recipient, "-o", "dest.age", "damaged.age"], in: directory.url)
        #expect(result.status == 3, "\(result.stderr)")
        #expect(try directory.read("dest.age") == Array("previous".utf8))
    }

    // MARK: F15 — the smaller items

    /// Ctrl-C at a passphrase prompt leaves the terminal echoing (driven
    /// through a pseudo-terminal by Python's pty module).
    @Test func F15_ctrlCAtAPromptRestoresEcho() throws {
        let (directory, _) = try Self.encrypted()
        // The child starts with no signal blocked (test runners' threads
        // block some, and a terminal's shell never does); every wait has a
        // deadline, so the test cannot hang.
        let script = """
            import os, pty, signal, sys, termios, time
            pid, fd = pty.fork()
            if pid == 0:
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.execv(sys.argv[1], [sys.argv[1], "encrypt", "-p", "-o", "p.age", "plain"])
            seen = b""
            deadline = time.time() + 20
            while b"assphrase" not in seen and time.time() < deadline:
                seen += os.read(fd, 1024)
            time.sleep(0.3)
            echo_during = bool(termios.tcgetattr(fd)[3] & termios.ECHO)
            os.write(fd, b"\\x03")
            status = None
            for _ in range(100):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                time.sleep(0.1)
            else:
                os.kill(pid, signal.SIGKILL)
                print("still running after Ctrl-C")
                sys.exit(1)
            echo_after = bool(termios.tcgetattr(fd)[3] & termios.ECHO)
            print(echo_during, echo_after, os.WIFSIGNALED(status) and os.WTERMSIG(status))
            """
        let result = try CLI.run(Self.python, ["-c", script, CLI.binary.path], in: directory.url)
        #expect(
            result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "False True \(SIGINT)",
            "\(result.stdoutText) \(result.stderr)")
    }

    /// `keychain decrypt-from` exits 3 on tampered data, like every other command.
    @Test func F15_decryptFromExitsThreeOnTamperedData() throws {
        let directory = try TemporaryDirectory()
        try directory.write("key", [UInt8](repeating: 8, count: 32))
        let env = ["COFFER_KEYCHAIN_DIR": directory.path("kc")].merging(Self.state(directory)) { $1 }
        func coffer(_ arguments: [String], stdin: [UInt8] = []) throws -> CLI.Result {
            try CLI.coffer(arguments, stdin: stdin, in: directory.url, environment: env)
        }
        let unlock = ["--keychain", "k", "--key-file", "key"]
        Self.ok(try coffer(["keychain", "create"] + unlock), "create")
        Self.ok(try coffer(["keychain", "generate-key", "--tag", "me", "--type", "p256"] + unlock), "generate-key")
        Self.ok(
            try coffer(["keychain", "public-key", "--tag", "me", "--type", "p256", "-o", "me.pem"] + unlock),
            "public-key")
        let sealed = try coffer(
            ["keychain", "encrypt-to", "--base64", "--tag", "me", "--type", "p256", "--peer", "me.pem"] + unlock,
            stdin: Array("hello".utf8))
        Self.ok(sealed, "encrypt-to")
        var text = Array(sealed.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        text[text.count - 5] = text[text.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let opened = try coffer(
            ["keychain", "decrypt-from", "--base64", "--tag", "me", "--type", "p256", "--peer", "me.pem"] + unlock,
            stdin: text)
        #expect(opened.status == 3, "\(opened.stderr)")
    }

    /// One rule for -o: a private key never replaces an existing file;
    /// everything else replaces it atomically.
    @Test func F15_privateKeyOutputsNeverOverwrite() throws {
        let (directory, _) = try Self.encrypted()
        Self.ok(try CLI.coffer(["keygen", "--type", "p256", "-o", "p256.pem"], in: directory.url), "keygen p256")
        try directory.write("existing", Array("keep me".utf8))
        let convert = try CLI.coffer(
            ["key", "convert", "--to", "pkcs8", "-o", "existing", "p256.pem"], in: directory.url)
        #expect(convert.status == 6, "\(convert.stderr)")
        #expect(try directory.read("existing") == Array("keep me".utf8))
        Self.ok(
            try CLI.coffer(
                ["key", "convert", "--public", "--to", "spki", "-o", "existing", "p256.pem"], in: directory.url),
            "public over a file")
        #expect(String(decoding: try directory.read("existing"), as: UTF8.self).contains("PUBLIC KEY"))
    }

    /// The tool is not dumpable: no core file, RLIMIT_CORE 0.
    @Test func F15_noCoreDumps() throws {
        let (directory, _) = try Self.encrypted()
        #expect(mkfifo(directory.path("in"), 0o600) == 0)
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["decrypt", "-i", "id.txt", "in"]
        process.currentDirectoryURL = directory.url
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        var limits = ""
        for _ in 0..<100 {
            limits = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8)) ?? ""
            if !limits.isEmpty,
                (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/comm", encoding: .utf8))?.hasPrefix(
                    "coffer") == true
            {
                break
            }
            usleep(20_000)
        }
        usleep(200_000)
        limits = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8)) ?? ""
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") } ?? ""
        #expect(
            core.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"], "\(core)")
    }

    /// As root: coffer run as nobody is not dumpable (PR_SET_DUMPABLE 0),
    /// which the kernel shows by giving its /proc files to root.
    @Test func F15_notDumpableAsAnotherUser() throws {
        guard Self.isRoot else { return }  // needs setpriv to another user
        let (directory, _) = try Self.encrypted()
        chmod(directory.url.path, 0o777)
        #expect(mkfifo(directory.path("in"), 0o666) == 0)
        chown(directory.path("id.txt"), 65534, 65534)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = [
            "--reuid=65534", "--regid=65534", "--clear-groups", CLI.binary.path, "decrypt", "-i", "id.txt", "in",
        ]
        process.currentDirectoryURL = directory.url
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        var owner: uid_t = .max
        for _ in 0..<100 {
            usleep(20_000)
            let comm = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/comm", encoding: .utf8)) ?? ""
            guard comm.hasPrefix("coffer") else { continue }
            usleep(200_000)
            var info = stat()
            if stat("/proc/\(process.processIdentifier)/environ", &info) == 0 { owner = info.st_uid }
            break
        }
        #expect(owner == 0, "coffer's /proc files belong to uid \(owner): it is dumpable")
    }
}
