import ArgumentParser
import CofferKeyServer
import Foundation

struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Checks the audit log's hash chain, or exports one subject's history.",
        subcommands: [Verify.self, Export.self])

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Checks every link of the audit chain; exits 1 naming the first broken entry.")
        @OptionGroup var data: DataOptions

        func run() async throws {
            let store = try await data.open(try await data.settings())
            let verifier = try await store.verifyAudit { checked in
                if checked % 100_000 == 0 { FileHandle.standardError.write(Data("checked \(checked)\n".utf8)) }
            }
            await store.close()
            if let broken = verifier.broken {
                print(
                    "audit chain broken at entry \(broken.seq): \(broken.reason) (\(verifier.checked) entries before it are intact)"
                )
                throw ExitCode(1)
            }
            print("audit chain intact: \(verifier.checked) entries")
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Prints every audit entry about one subject, one JSON object per line.")
        @OptionGroup var data: DataOptions
        @Option(help: "The subject, as the sign-in token names it.") var subject: String
        @Option(help: "The realm (default default).") var realm = "default"

        func run() async throws {
            let store = try await data.open(try await data.settings())
            let history = try await store.auditHistory(realm: realm, subject: subject)
            await store.close()
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            for entry in history {
                print(String(decoding: try encoder.encode(entry), as: UTF8.self))
            }
        }
    }
}
