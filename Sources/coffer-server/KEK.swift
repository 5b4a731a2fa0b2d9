#if Server
import ArgumentParser
import Coffer
import CofferKeyServerCore
import Foundation

struct KEK: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rotates the KEK and reseals every stored key under it, while the server serves.",
        subcommands: [
            Init.self, Rotate.self, Rewrap.self, List.self, Enable.self, AcceptRestore.self, Reseal.self,
            MoveToDatabase.self,
        ])

    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Makes a new key server: the KEK key ring (and its keychain key) and the database's tables.",
            discussion: """
                The only command that makes a KEK ring or a database (besides serve --dev): every other one \
                refuses a missing ring or database, so that a misspelt --data, --database or --config member is \
                an error rather than a second key server with a KEK of its own. Run it once, for the first \
                replica. With a postgres:// database the ring goes into the database, which every replica reads \
                (--ring-in-file keeps it in DIR/kek.ckr instead, to be copied to each replica); with SQLite it \
                goes into DIR/kek.ckr (--ring-in-database puts it in the database file). An existing kek.ckr is \
                used as it is. Refused when both exist already; when only one does (a new database for an \
                existing ring, say), it makes the other.
                """)
        @OptionGroup var data: DataOptions
        @Flag(
            help:
                "Keep the new KEK ring in the database, read by every replica (the default for a postgres:// database)."
        )
        var ringInDatabase = false
        @Flag(help: "Keep the new KEK ring in DIR/kek.ckr (the default for SQLite), to be copied to each replica.")
        var ringInFile = false

        func validate() throws {
            guard !(ringInDatabase && ringInFile) else {
                throw ValidationError("give one of --ring-in-database and --ring-in-file")
            }
        }

        func run() async throws {
            let settings = try await data.settings()
            let directory = try settings.required(data.directory, "data", flag: "--data")
            let ringPath = directory + "/kek.ckr"
            let database = data.databaseDescription(settings)
            let (hadDatabase, databaseKeepsRing) = await data.databaseExists(settings)
            let hadRing = FileManager.default.fileExists(atPath: ringPath) || databaseKeepsRing
            let place = databaseKeepsRing ? "in the database" : ringPath
            guard !(hadRing && hadDatabase) else {
                throw ValidationError(
                    "the KEK ring (\(place)) and the database \(database) exist already: nothing to make")
            }
            guard hadRing || !hadDatabase else {
                throw ValidationError(
                    "the database \(database) exists but there is no KEK ring at \(ringPath) nor in it: restore kek.ckr from a backup or another replica (a new KEK could open none of its keys)"
                )
            }
            // PostgreSQL is for several replicas: the ring goes where they all read it.
            let intoDatabase =
                ringInDatabase
                || (data.isPostgres(settings) && !ringInFile && !FileManager.default.fileExists(atPath: ringPath))
            let (store, ring) = try await data.openWithRing(settings, creating: true, ringInDatabase: intoDatabase)
            let primary = String(format: "%08x", store.kekPrimaryID)
            await store.close()
            print(
                (hadRing ? "used the KEK ring " : "made the KEK ring ")
                    + (ring.place == "the database" ? "in the database" : ring.place) + " (primary \(primary))"
                    + "; " + (hadDatabase ? "used" : "made") + " the database \(database)")
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Adds a new primary key to the KEK ring, then reseals every stored key under it.")
        @OptionGroup var options: RewrapOptions

        func run() async throws {
            let settings = try await options.data.settings()
            let id = try await options.data.withRing(settings) { _, ring in
                try await ring.modify { file in try file.update { try $0.rotate() } }
            }
            FileHandle.standardError.write(Data("KEK primary is now \(String(format: "%08x", id))\n".utf8))
            try await options.rewrap(settings)
        }
    }

    struct Rewrap: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Reseals every stored key not yet under the KEK's primary (resumes a rotation that stopped).")
        @OptionGroup var options: RewrapOptions

        func run() async throws { try await options.rewrap(try await options.data.settings()) }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Lists the KEK ring's keys (id, state, creation time) and how many stored keys each sealed; never key bytes."
        )
        @OptionGroup var data: DataOptions

        func run() async throws {
            let settings = try await data.settings()
            let (ring, usage) = try await data.withRing(settings) { store, place in
                (try await place.read().keyRing, try await store.rowsByKEKKey())
            }
            let formatter = ISO8601DateFormatter()
            for key in ring.keys {
                print(
                    "\(String(format: "%08x", key.id))  \(key.state.description.padding(toLength: 8, withPad: " ", startingAt: 0))  \(formatter.string(from: key.created))  \(Self.sealed(usage, key.id))"
                )
            }
            let known = Set(ring.keys.map(\.id))
            for id in Set(usage.keys.keys).union(usage.secrets.keys).sorted() where !known.contains(id) {
                print("\(String(format: "%08x", id))  absent    (not in this ring)      \(Self.sealed(usage, id))")
            }
            if usage.malformed > 0 || !usage.malformedSecrets.isEmpty {
                let secrets = usage.malformedSecrets.sorted().joined(separator: ", ")
                print(
                    "-         malformed (too short to name a key) \(Self.stored(usage.malformed))"
                        + (secrets.isEmpty ? "" : ", server secrets \(secrets)"))
            }
        }

        static func stored(_ count: Int) -> String { count == 1 ? "1 stored key" : "\(count) stored keys" }

        /// "3 stored keys", with ", server secrets audit-anchor-key, dpop-nonce-key" when it sealed any.
        static func sealed(_ usage: KEKUsage, _ id: UInt32) -> String {
            let secrets = (usage.secrets[id] ?? []).sorted()
            return stored(usage.keys[id] ?? 0)
                + (secrets.isEmpty ? "" : ", server secrets \(secrets.joined(separator: ", "))")
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Enables a disabled KEK key again, for stored keys still sealed under it (a database restored from before a rotation); then run kek rewrap."
        )
        @OptionGroup var data: DataOptions
        @Argument(help: "The KEK key's id (8 hex digits, as kek list prints it); the key must be disabled.")
        var id: String

        func run() async throws {
            guard id.count <= 8, let value = UInt32(id, radix: 16) else {
                throw ValidationError("a key id is up to 8 hex digits")
            }
            let settings = try await data.settings()
            try await data.withRing(settings) { _, ring in
                try await ring.modify { file in try file.update { try $0.enable(value) } }
            }
            FileHandle.standardError.write(
                Data(
                    """
                    enabled KEK key \(String(format: "%08x", value)): running servers read it within 30 s; \
                    coffer-server kek rewrap reseals its stored keys under the primary and disables it again

                    """.utf8))
        }
    }

    struct AcceptRestore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "accept-restore",
            abstract:
                "Accepts DIR/kek.ckr as it is now, though older than one already written (a backup restored on purpose).",
            discussion: """
                The KEK ring is guarded against an older copy put back (the per-user state file, or the KEK \
                keychain): such a copy would enable again the KEK keys a rewrap disabled, and the server refuses \
                it. After restoring a backup on purpose, this makes its generation the mark; run kek rewrap \
                afterwards if the restored ring has keys enabled that later rotations had disabled.
                """)
        @OptionGroup var data: DataOptions

        func run() async throws {
            let settings = try await data.settings()
            let (store, ring) = try await data.locateRing(settings)
            let generation: UInt64
            do { generation = try await ring.acceptCurrentGeneration() } catch {
                await store.close()
                throw error
            }
            await store.close()
            FileHandle.standardError.write(Data("accepted \(ring.place) at generation \(generation)\n".utf8))
        }
    }

    /// The server's data and the size of the rewrap's transactions.
    struct RewrapOptions: ParsableArguments {
        @OptionGroup var data: DataOptions
        @Option(help: "Rows per transaction.") var batch = 500
        @Option(
            help: ArgumentHelp(
                "Seconds to wait for running servers to read the new KEK, before resealing what they sealed meanwhile and disabling the older keys (default 35; 0 when no server runs).",
                valueName: "SECONDS"))
        var settle = 35

        func validate() throws {
            guard batch >= 1 else { throw ValidationError("--batch is at least 1") }
            guard (0...3600).contains(settle) else { throw ValidationError("--settle is 0 to 3600 seconds") }
        }

        /// Reseals every stored key not yet under the KEK's primary, with
        /// progress; then, once none is left, disables every older key of
        /// the ring (security review 3, G14), so that a row sealed under
        /// one, such as one written back by someone who kept an old KEK
        /// key, no longer opens. A server reads the ring again every 30
        /// seconds and until then may seal new keys under the older
        /// primary: so the rows are counted again after `settle` seconds,
        /// and what such a server sealed meanwhile is resealed first.
        func rewrap(_ settings: ServerSettings) async throws {
            let (store, ring) = try await data.openWithRing(settings)
            let total = try await store.rowsToRewrap()
            let say: @Sendable (String) -> Void = { line in FileHandle.standardError.write(Data((line + "\n").utf8)) }
            var done = try await store.rewrap(batchSize: batch) { done in say("resealed \(done) of \(total)") }
            var left = try await store.rowsToRewrap()
            // With nothing resealed and no older key still enabled, no
            // server can be sealing under one: nothing to wait for.
            let olderEnabled = try await ring.read().keyRing.keys.contains { $0.state == .active }
            if left == 0 && settle > 0 && (done > 0 || olderEnabled) {
                say("waiting \(settle) s for running servers to read the new KEK")
                try await Task.sleep(for: .seconds(settle))
                done += try await store.rewrap(batchSize: batch) { _ in }
                left = try await store.rowsToRewrap()
            }
            if left == 0 {
                let disabled = try await ring.modify { file in
                    try file.update { ring -> [UInt32] in
                        let older = ring.keys.filter { $0.state == .active }.map(\.id)
                        for id in older { try ring.disable(id) }
                        return older
                    }
                }
                if !disabled.isEmpty {
                    say(
                        "disabled the older KEK keys \(disabled.map { String(format: "%08x", $0) }.joined(separator: ", "))"
                    )
                }
            }
            await store.close()
            print("resealed \(done) keys; \(left) left under an older KEK key")
        }
    }
}
#endif
