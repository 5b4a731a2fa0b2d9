import ArgumentParser
import Coffer
import CofferKeyClient
import Foundation

/// `coffer tour server`: the seed's second flow, keys from a server after
/// sign-in, against a development `coffer-server` it starts itself.
struct TourServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server",
        abstract: "A tour of keys from a server after sign-in, against a development coffer-server it starts itself.",
        discussion:
            "Needs coffer-server beside coffer, built with the Server trait (swift build --traits Server makes both); no configuration; removes what it made."
    )

    /// The one command that builds what this tour needs and runs it.
    static var invocation: String {
        Tour.isBuildProduct
            ? "swift build --traits Server && swift run --traits Server coffer tour server" : "coffer tour server"
    }

    func run() async throws {
        let directory = try TourDirectory("tour-server")
        defer { directory.finish() }
        let server = try DevServer(data: directory.path("server"))
        defer { server.stop() }
        let tour = Tour()
        tour.step("started a development key server", "\(server.url) (its own issuer; never for production)")

        let url = URL(string: server.url)!
        let alice = try await server.token(for: "alice")
        tour.step(
            "alice signed in", "the app holds her sign-in token (a JWT signed by the server's development issuer)")
        let client = try KeyServerClient(server: url, account: "alice", token: { alice })
        let key = try await KeyServerRefusal.mapped { try await client.currentKey(purpose: "presents") }
        tour.step(
            "the server made alice's key for presents on her first request",
            "version \(key.version), key id \(key.keyID); the key itself stays in memory")

        let ringPath = directory.path("presents.ckr")
        let secret = try await KeyServerRefusal.mapped { try await client.unlockSecret(purpose: "presents") }
        let ring = KeyRingStore(path: ringPath, secret: secret, rollbackGuard: nil)
        _ = try await ring.create()
        let context = try SealingContext("presents", "1", "description", "to: Grandma")
        let sealed = try await ring.read().keyRing.seal(Data("a knitted scarf".utf8), context: context)
        tour.step(
            "sealed a present's description under a key ring the server's key unlocks",
            "\(sealed.count) bytes; \"to: Grandma\" is bound to it and stays clear")

        let later = try KeyServerClient(server: url, account: "alice", token: { alice })
        let again = KeyRingStore(
            path: ringPath,
            secret: try await KeyServerRefusal.mapped { try await later.unlockSecret(purpose: "presents") },
            rollbackGuard: nil)
        let opened = try await again.read().keyRing.open(sealed, context: context)
        try tour.check(String(decoding: opened, as: UTF8.self) == "a knitted scarf", "the description did not open")
        tour.step("the app started again, fetched the same key and opened it", "\"a knitted scarf\"")

        let bobToken = try await server.token(for: "bob")
        let bob = try KeyServerClient(server: url, account: "bob", token: { bobToken })
        let bobs = KeyRingStore(
            path: ringPath,
            secret: try await KeyServerRefusal.mapped { try await bob.unlockSecret(purpose: "presents") },
            rollbackGuard: nil)
        try await tour.check((try? bobs.read()) == nil, "bob's key opened alice's key ring")
        tour.step("bob signed in: his key for presents is his own, and alice's key ring does not open with it", nil)
        print(
            "\nTour complete. Run a real one: \(Tour.isBuildProduct ? "swift run --traits Server coffer-server" : "coffer-server") serve --data DIR --kek-passphrase-file F --issuer … --audience … --jwks-url …"
        )
    }
}

/// `coffer-server serve --dev` on a free loopback port, as a child process.
final class DevServer {
    let process = Process()
    let url: String

    init(data: String) throws {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
            .appendingPathComponent("coffer-server")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw CLIFailure(
                "coffer tour server needs coffer-server beside coffer (\(binary.path))",
                hint: "\(TourServer.invocation), or install both into the same folder (scripts/install)")
        }
        process.executableURL = binary
        process.arguments = ["serve", "--dev", "--listen", "127.0.0.1:0", "--data", data]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        var said = Data()
        while !said.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            guard !chunk.isEmpty else {
                process.waitUntilExit()
                // 69: a coffer-server built without the Server trait, which has no server.
                if process.terminationStatus == 69 {
                    throw CLIFailure(
                        "coffer-server beside coffer was built without the Server trait",
                        hint: "run \(TourServer.invocation)")
                }
                throw CLIFailure("the development key server did not start")
            }
            said += chunk
        }
        let line = String(decoding: said, as: UTF8.self)
        guard let colon = line.lastIndex(of: ":"), let port = Int(line[line.index(after: colon)...].filter(\.isNumber))
        else { throw CLIFailure("the development key server said: \(line)") }
        url = "http://127.0.0.1:\(port)"
    }

    /// A sign-in token for `subject` from the server's development issuer.
    func token(for subject: String) async throws -> String {
        let server = URL(string: url)!
        return try await KeyServerRefusal.mapped {
            try await KeyServerClient.developmentToken(server: server, subject: subject)
        }
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
