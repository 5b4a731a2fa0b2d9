#if Server
import Coffer
import Foundation
import Testing

/// `coffer-server kek rotate` while the server serves, and after `kill -9`.
@Suite(.serialized) struct KEKRotationTests {
    /// Runs `coffer-server` with `arguments`: status and stdout.
    /// With `killAtProgress`, `kill -9` as soon as it reports its first resealed batch.
    static func serverTool(_ arguments: [String], environment: [String: String] = [:], killAtProgress: Bool = false)
        async throws -> (Int32, String)
    {
        let process = Process()
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.executableURL = ServerProcess.binary
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        var said = Data()
        while killAtProgress, !String(decoding: said, as: UTF8.self).contains("resealed") {
            let chunk = err.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            said += chunk
        }
        if killAtProgress { kill(process.processIdentifier, SIGKILL) }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test(arguments: Backend.allCases)
    func rotatingTheKEKWhileServingLosesNoKeyAndResumesAfterKillNine(_ backend: Backend) async throws {
        let issuer = try Issuer()
        let data = issuer.folder + "/data"
        let (database, environment) = try backend.serverOptions()
        var server = try ServerProcess(issuer: issuer, data: data, extra: database, environment: environment)
        defer { server.stop() }
        let token = try issuer.token("kek-user")
        let address = server.address
        let purposes = (0..<300).map { "p\($0)" }
        var keys: [String: String] = [:]
        for purpose in purposes {
            let (status, body) = try await address.request("/v1/keys/\(purpose)", token: token)
            #expect(status == 200)
            keys[purpose] = body["key"] as? String
        }
        let tool = ["--data", data, "--kek-passphrase-file", issuer.folder + "/kek-passphrase"] + database
        // The server here makes no key while the KEK rotates, so a second's wait for it is enough.
        let settle = ["--settle", "1"]
        // p0's row as the first KEK key sealed it, read with sqlite3 or psql.
        let sql = { (query: String) throws -> String in
            backend == .sqlite
                ? try Spawned.run("/usr/bin/sqlite3", [data + "/keys.sqlite", query]).text
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                : try TestPostgres.value(database[1], query)
        }
        let original = try sql(
            backend == .sqlite
                ? "SELECT hex(wrapped) FROM keys WHERE purpose = 'p0'"
                : "SELECT encode(wrapped, 'hex') FROM keys WHERE purpose = 'p0'")
        #expect(original.count > 100)
        // Readers keep fetching while the KEK rotates; every answer must be the key it was.
        let expected = keys
        let stop = Locked(false)
        let readers = Task {
            var failures = 0
            var reads = 0
            while !stop.withLock({ $0 }) {
                let purpose = purposes.randomElement()!
                let (status, body) = try await address.request("/v1/keys/\(purpose)", token: token)
                if status != 200 || body["key"] as? String != expected[purpose] { failures += 1 }
                reads += 1
            }
            return (reads, failures)
        }
        // A first rotation killed part way, then resumed; then a second, whole.
        let (killed, _) = try await Self.serverTool(
            ["kek", "rotate", "--batch", "5"] + settle + tool, environment: environment, killAtProgress: true)
        #expect(killed == SIGKILL)
        var (status, out) = try await Self.serverTool(
            ["kek", "rewrap", "--batch", "50"] + settle + tool, environment: environment)
        #expect(status == 0 && out.hasSuffix("keys; 0 left under an older KEK key\n"), "\(out)")
        // The killed run had resealed some rows, not all: the resumed one did the rest.
        let resumed = Int(out.split(separator: " ")[1]) ?? 0
        #expect(resumed > 0 && resumed < 300, "\(out)")
        (status, out) = try await Self.serverTool(
            ["kek", "rotate", "--batch", "50"] + settle + tool, environment: environment)
        #expect(status == 0 && out.contains("resealed 300 keys; 0 left"), "\(out)")
        stop.withLock { $0 = true }
        let (reads, failures) = try await readers.value
        #expect(reads > 50)
        #expect(failures == 0, "\(failures) of \(reads) reads failed during the rotation")
        for (purpose, key) in keys {
            let (status, body) = try await address.request("/v1/keys/\(purpose)", token: token)
            #expect(status == 200 && body["key"] as? String == key)
        }

        // Each completed rotation disabled the keys before it: of the
        // ring's three keys, only the primary opens anything.
        // On PostgreSQL the ring is in the database (kek init's default
        // there): the row holds a kek.ckr's bytes, copied out with psql.
        var ringPath = data + "/kek.ckr"
        if backend == .postgres {
            ringPath = issuer.folder + "/from-database.ckr"
            let hex = try sql("SELECT encode(ring, 'hex') FROM kek_ring")
            FileManager.default.createFile(
                atPath: ringPath, contents: Data(try #require(Hex.decode(hex))), attributes: [.posixPermissions: 0o600])
        }
        let ring = try await KeyRingStore(
            path: ringPath,
            secret: .password(SecretBytes(Array("a passphrase for the tests' KEK".utf8))), rollbackGuard: nil
        ).read().keyRing
        #expect(ring.keys.map(\.state).sorted { $0.rawValue < $1.rawValue } == [.primary, .disabled, .disabled])
        // So p0's row as the first KEK key sealed it, written back by
        // someone who kept that key, no longer opens (after a restart, so
        // that the server reads the ring now rather than within 30 s).
        _ = try sql(
            backend == .sqlite
                ? "UPDATE keys SET wrapped = X'\(original)' WHERE purpose = 'p0'"
                : "UPDATE keys SET wrapped = decode('\(original)', 'hex') WHERE purpose = 'p0'")
        server.stop()
        server = try ServerProcess(issuer: issuer, data: data, extra: database, environment: environment)
        let (planted, _) = try await server.address.request("/v1/keys/p0", token: token)
        #expect(planted != 200)
        #expect(try await server.address.request("/v1/keys/p1", token: token).0 == 200)

        // A database restored from before the rotations is this case for
        // every row: `kek list` names the disabled key that sealed the row
        // (its id is the sealed value's bytes 1-4), `kek enable` opens it
        // again, and `kek rewrap` reseals the row and disables the key.
        let first = String(original.lowercased().dropFirst(2).prefix(8))
        let primary = String(format: "%08x", ring.primaryID)
        var listed = try await Self.serverTool(["kek", "list"] + tool, environment: environment)
        #expect(listed.0 == 0)
        #expect(listed.1.contains("\(first)  disabled") && listed.1.contains("  1 stored key\n"), "\(listed.1)")
        #expect(
            listed.1.contains("\(primary)  primary")
                && listed.1.contains("  299 stored keys, server secrets audit-anchor-key, audit-link-key\n"),
            "\(listed.1)")
        #expect(try await Self.serverTool(["kek", "enable", primary] + tool, environment: environment).0 != 0)
        #expect(try await Self.serverTool(["kek", "enable", first] + tool, environment: environment).0 == 0)
        server.stop()
        server = try ServerProcess(issuer: issuer, data: data, extra: database, environment: environment)
        var (reopened, body) = try await server.address.request("/v1/keys/p0", token: token)
        #expect(reopened == 200 && body["key"] as? String == keys["p0"])
        (status, out) = try await Self.serverTool(["kek", "rewrap", "--settle", "0"] + tool, environment: environment)
        #expect(status == 0 && out == "resealed 1 keys; 0 left under an older KEK key\n", "\(out)")
        listed = try await Self.serverTool(["kek", "list"] + tool, environment: environment)
        #expect(
            listed.1.contains("\(first)  disabled")
                && listed.1.contains("  300 stored keys, server secrets audit-anchor-key, audit-link-key\n"),
            "\(listed.1)")
        // Nothing left to reseal and no older key enabled: the default
        // 35-second settle is skipped (operator trial 4).
        let started = ContinuousClock.now
        (status, out) = try await Self.serverTool(["kek", "rewrap"] + tool, environment: environment)
        #expect(status == 0 && out == "resealed 0 keys; 0 left under an older KEK key\n", "\(out)")
        #expect(ContinuousClock.now - started < .seconds(20), "a rewrap with nothing to do returns at once")
        server.stop()
        server = try ServerProcess(issuer: issuer, data: data, extra: database, environment: environment)
        (reopened, body) = try await server.address.request("/v1/keys/p0", token: token)
        #expect(reopened == 200 && body["key"] as? String == keys["p0"])

        // Rows planted with sqlite3 or psql: one naming a KEK key no ring
        // has, one too short to name any. `kek list` shows both for what they are.
        let (named, short) =
            backend == .sqlite
            ? ("X'01DEADBEEF00'", "X'0102'") : ("decode('01deadbeef00', 'hex')", "decode('0102', 'hex')")
        _ = try sql(
            """
            INSERT INTO keys (realm, subject, device, purpose, version, wrapped, created)
            VALUES ('default', 'planted', '', 'x1', 1, \(named), 0), ('default', 'planted', '', 'x2', 1, \(short), 0)
            """)
        listed = try await Self.serverTool(["kek", "list"] + tool, environment: environment)
        #expect(listed.0 == 0)
        #expect(listed.1.contains("deadbeef  absent    (not in this ring)      1 stored key\n"), "\(listed.1)")
        #expect(listed.1.contains("malformed (too short to name a key) 1 stored key\n"), "\(listed.1)")
    }
}
#endif
