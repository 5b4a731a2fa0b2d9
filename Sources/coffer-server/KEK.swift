#if Server
import ArgumentParser
import Coffer
import CofferKeyServer
import Foundation

struct KEK: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rotates the KEK and reseals every stored key under it, while the server serves.",
        subcommands: [Rotate.self, Rewrap.self])

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Adds a new primary key to the KEK ring, then reseals every stored key under it.")
        @OptionGroup var options: RewrapOptions

        func run() async throws {
            let settings = try await options.data.settings()
            let id = try await options.data.kekRing(settings).modify { file in try file.update { try $0.rotate() } }
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

    /// The server's data and the size of the rewrap's transactions.
    struct RewrapOptions: ParsableArguments {
        @OptionGroup var data: DataOptions
        @Option(help: "Rows per transaction.") var batch = 500

        /// Reseals every stored key not yet under the KEK's primary, with progress.
        func rewrap(_ settings: ServerSettings) async throws {
            let store = try await data.open(settings)
            let total = try await store.rowsToRewrap()
            let done = try await store.rewrap(batchSize: batch) { done in
                FileHandle.standardError.write(Data("resealed \(done) of \(total)\n".utf8))
            }
            print("resealed \(done) keys; \(try await store.rowsToRewrap()) left under an older KEK key")
        }
    }
}
#endif
