import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `coffer store passwd`, `slots`, `add-slot` and `remove-slot`
/// (docs/store.md, "Unlock slots"), and `kill -9` while they write.
@Suite(.serialized) struct StoreSlotCLITests {
    static func run(_ arguments: [String], _ directory: TemporaryDirectory, unlock: [String]) throws -> CLI.Result {
        try CLI.coffer(["store"] + arguments + ["--db", "s.sqlite"] + unlock, in: directory.url)
    }

    static func opens(_ directory: TemporaryDirectory, _ unlock: [String]) throws -> Bool {
        try run(["get", "--table", "presents", "--id", "1"], directory, unlock: unlock).status == 0
    }

    @Test func aStoreGainsSlotsChangesItsSecretAndIsRecoveredWithARecoveryKey() throws {
        let directory = try StoreCLITests.setUp()
        let kek = ["--kek-file", "kek"]
        StoreCLITests.ok(
            try StoreCLITests.store(
                ["put", "--table", "presents"], directory, stdin: Array(#"{"to": "Tom", "description": "a kite"}"#.utf8)
            ),
            "put")
        try directory.write("pw", Array("a new passphrase\n".utf8))
        var result = try Self.run(
            ["add-slot", "--new-passphrase-file", "pw", "--kdf", "pbkdf2"], directory, unlock: kek)
        StoreCLITests.ok(result, "add-slot")
        #expect(result.stderr == "Added key slot 1\n")
        result = try Self.run(["add-slot", "--recovery-key"], directory, unlock: ["--passphrase-file", "pw"])
        StoreCLITests.ok(result, "add-slot --recovery-key")
        let recovery = result.stdoutText
        #expect(recovery.count == 66 && recovery.hasSuffix("\n"), "\(recovery)")
        #expect(result.stderr.contains("Added key slot 2") && !result.stderr.contains(recovery.prefix(11)))
        result = try Self.run(["slots"], directory, unlock: kek)
        #expect(
            result.stdoutText.split(separator: "\n").map { String($0.prefix(12)) }
                == ["0  key (a KE", "1  passphras", "2  key (a KE"], "\(result.stdoutText)")
        #expect(result.stdoutText.contains("PBKDF2"), "\(result.stdoutText)")
        // The recovery key, written down and typed back in lower case.
        try directory.write("recovery.txt", Array(recovery.lowercased().utf8))
        let byRecovery = ["--kek-file", "recovery.txt"]
        #expect(try Self.opens(directory, byRecovery))
        // A typo in it is said as such, and opens nothing.
        var typo = Array(recovery.utf8)
        typo[7] = typo[7] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        try directory.write("typo.txt", typo)
        result = try Self.run(
            ["get", "--table", "presents", "--id", "1"], directory, unlock: ["--kek-file", "typo.txt"])
        #expect(result.status == 64 && result.stderr.contains("typo"), "\(result.stderr)")

        // The KEK and the passphrase are lost: the recovery key locks the store with a new KEK alone.
        try directory.write("kek2", [UInt8](repeating: 0x5a, count: 32))
        result = try Self.run(["passwd", "--new-kek-file", "kek2"], directory, unlock: byRecovery)
        StoreCLITests.ok(result, "passwd")
        #expect(result.stderr.contains("New primary key") && result.stderr.contains("one key slot now"))
        for gone in [kek, ["--passphrase-file", "pw"], byRecovery] {
            result = try Self.run(["get", "--table", "presents", "--id", "1"], directory, unlock: gone)
            #expect(result.status != 0, "\(gone) still opens the store")
        }
        result = try Self.run(["get", "--table", "presents", "--id", "1"], directory, unlock: ["--kek-file", "kek2"])
        #expect(result.status == 0 && result.stdoutText.contains("a kite"), "\(result.stderr)")

        // The last slot stays; a slot that is not there is said so.
        result = try Self.run(["remove-slot", "--slot", "0"], directory, unlock: ["--kek-file", "kek2"])
        #expect(result.status != 0 && result.stderr.contains("only key slot"), "\(result.stderr)")
        result = try Self.run(["remove-slot", "--slot", "4"], directory, unlock: ["--kek-file", "kek2"])
        #expect(result.status != 0 && result.stderr.contains("no key slot 4"), "\(result.stderr)")
        StoreCLITests.ok(
            try Self.run(["add-slot", "--new-kek-file", "kek"], directory, unlock: ["--kek-file", "kek2"]), "add-slot")
        StoreCLITests.ok(
            try Self.run(["remove-slot", "--slot", "0"], directory, unlock: ["--kek-file", "kek"]), "remove-slot")
        #expect(try !Self.opens(directory, ["--kek-file", "kek2"]))
        #expect(try Self.opens(directory, kek))
        result = try Self.run(["verify"], directory, unlock: kek)
        #expect(result.status == 0, "\(result.stdoutText)")
        // Conflicting options are refused before anything is opened.
        result = try Self.run(["add-slot", "--recovery-key", "--new-kek-file", "kek2"], directory, unlock: kek)
        #expect(result.status == 64, "\(result.stderr)")
        result = try Self.run(["passwd", "--new-kek-server"], directory, unlock: kek)
        #expect(result.status == 64 && result.stderr.contains("--kek-server"), "\(result.stderr)")
    }

    /// `kill -9` at any moment of `store passwd` (the secret moving between
    /// two KEK files) and of `store add-slot`: afterwards the store opens
    /// with the old secret or the new one, never neither, and with the new
    /// one whenever the command said it was done; its records stay intact.
    @Test func killNineDuringSlotChanges() throws {
        let directory = try StoreCLITests.setUp()
        try directory.write("kekB", [UInt8](repeating: 0xb7, count: 32))
        try directory.write("kekC", [UInt8](repeating: 0xc3, count: 32))
        StoreCLITests.ok(
            try StoreCLITests.store(
                ["put", "--table", "presents"], directory, stdin: Array(#"{"to": "Tom", "description": "a kite"}"#.utf8)
            ),
            "put")
        // How long one change takes here, so the kills fall across all of it.
        let start = Date()
        StoreCLITests.ok(
            try Self.run(["passwd", "--new-kek-file", "kekB"], directory, unlock: ["--kek-file", "kek"]), "passwd")
        // Adjusted as the rounds go (longer after a kill, shorter after a
        // finish), so that kills keep falling across the whole command on a
        // machine as loaded as it is now.
        var span = Date().timeIntervalSince(start)
        let first = span
        var current = "kekB"
        var killed = 0
        var finished = 0
        for round in 0..<100 {
            let next = current == "kek" ? "kekB" : "kek"
            let addsSlot = round % 4 == 3
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments =
                ["store", addsSlot ? "add-slot" : "passwd", "--db", "s.sqlite", "--kek-file", current]
                + ["--new-kek-file", addsSlot ? "kekC" : next]
            process.currentDirectoryURL = directory.url
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(useconds_t(Double.random(in: 0...1.2) * span * 1_000_000))  // fault injection
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let done = process.terminationReason == .exit && process.terminationStatus == 0
            if done { finished += 1 } else { killed += 1 }
            span *= done ? 0.95 : 1.05
            if addsSlot {
                #expect(try Self.opens(directory, ["--kek-file", current]), "round \(round): the old secret was lost")
                if done { #expect(try Self.opens(directory, ["--kek-file", "kekC"]), "round \(round)") }
                continue
            }
            let old = try Self.opens(directory, ["--kek-file", current])
            let new = try Self.opens(directory, ["--kek-file", next])
            #expect(old != new, "round \(round): old opens \(old), new opens \(new)")
            if done { #expect(new, "round \(round): an acknowledged change was lost") }
            if new { current = next }
        }
        print("store slot kill -9: 100 rounds, \(killed) killed, \(finished) finished (one change took \(first) s)")
        #expect(killed > 10 && finished > 10)
        let verified = try Self.run(["verify"], directory, unlock: ["--kek-file", current])
        #expect(verified.status == 0, "\(verified.stdoutText)")
    }
}

extension StoreSlotCLITests {
    /// A removed slot put back by a database writer (the key ring row as it
    /// was, written with sqlite3): the store refuses its state, and the
    /// removed KEK does not get in.
    @Test func aRemovedSlotPutBackWithSQLiteOpensNothing() throws {
        let directory = try StoreCLITests.setUp()
        try directory.write("kekB", [UInt8](repeating: 0xb7, count: 32))
        StoreCLITests.ok(
            try Self.run(["add-slot", "--new-kek-file", "kekB"], directory, unlock: ["--kek-file", "kek"]), "add-slot")
        let before = try StoreTamperCLITests.sqlite(
            "SELECT hex(value) FROM coffer_meta WHERE name = 'key_ring'", directory
        ).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!before.isEmpty)
        StoreCLITests.ok(
            try Self.run(["remove-slot", "--slot", "1"], directory, unlock: ["--kek-file", "kek"]), "remove-slot")
        #expect(try !Self.opens(directory, ["--kek-file", "kekB"]))
        try StoreTamperCLITests.sqlite(
            "UPDATE coffer_meta SET value = X'\(before)' WHERE name = 'key_ring'", directory)
        let result = try Self.run(
            ["get", "--table", "presents", "--id", "1"], directory, unlock: ["--kek-file", "kekB"])
        #expect(
            result.status == 3 && result.stderr.contains("changed without the store's keys"), "\(result.stderr)")
    }
}
