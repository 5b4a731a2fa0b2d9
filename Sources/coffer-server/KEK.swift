#if Server
import ArgumentParser
import Coffer
import CofferKeyServer
import Foundation

struct KEK: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kek", abstract: "Rotates the KEK and reseals every stored key under it, while the server serves.",
        subcommands: [Rotate.self, Rewrap.self])

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract: "Adds a new primary key to the KEK ring, then reseals every stored key under it.")
        @OptionGroup var data: DataOptions
        @Option(help: "Rows per transaction.") var batch = 500

        func run() async throws {
            let settings = try await data.settings()
            let id = try await data.kekRing(settings).modify { file in try file.update { try $0.rotate() } }
            FileHandle.standardError.write(Data("KEK primary is now \(String(format: "%08x", id))\n".utf8))
            try await Rewrap.rewrap(try await data.open(settings), batch: batch)
        }
    }

    struct Rewrap: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rewrap",
            abstract: "Reseals every stored key not yet under the KEK's primary (resumes a rotation that stopped).")
        @OptionGroup var data: DataOptions
        @Option(help: "Rows per transaction.") var batch = 500

        func run() async throws { try await Self.rewrap(try await data.open(try await data.settings()), batch: batch) }

        static func rewrap(_ store: ServerKeyStore, batch: Int) async throws {
            let total = try await store.rowsToRewrap()
            let done = try await store.rewrap(batchSize: batch) { done in
                FileHandle.standardError.write(Data("resealed \(done) of \(total)\n".utf8))
            }
            print("resealed \(done) keys; \(try await store.rowsToRewrap()) left under an older KEK key")
        }
    }
}
#endif
