#if Server
import ArgumentParser
import CofferKeyServerCore
import Foundation

struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Checks the audit log's hash chain, prints its head, or exports one subject's history.",
        subcommands: [Verify.self, Head.self, Export.self])

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Checks every link of the audit chain and the server's anchors; exits 1 naming the first broken entry.",
            discussion: """
                Every anchor the server stored must carry its MAC (a key only the KEK opens) and lie on the chain, \
                and so must --expect-head, a head printed earlier by `audit head` or `audit verify` and kept \
                outside the database: a cut tail, or an entry removed or rewritten, fails. --checkpoint takes \
                the last line of the file serve --audit-checkpoint appends to as that head.
                """)
        @OptionGroup var data: DataOptions
        @Option(help: ArgumentHelp("A head kept earlier: the chain must still pass through it.", valueName: "SEQ:HASH"))
        var expectHead: String?
        @Option(
            help: ArgumentHelp(
                "The server's checkpoint file (serve --audit-checkpoint): its last line is the head expected.",
                valueName: "FILE"))
        var checkpoint: String?

        func validate() throws {
            if expectHead != nil && checkpoint != nil {
                throw ValidationError("give --expect-head or --checkpoint, not both")
            }
        }

        func run() async throws {
            var expected: AuditHead?
            do { expected = try expectHead.map(AuditHead.init) } catch {
                throw ValidationError("--expect-head: \(error)")
            }
            if let checkpoint {
                guard FileManager.default.isReadableFile(atPath: checkpoint) else {
                    throw ValidationError("cannot read the checkpoint file \(checkpoint)")
                }
                guard let last = try Serve.lastCheckpoint(checkpoint) else {
                    throw ValidationError("the checkpoint file \(checkpoint) has no line yet")
                }
                expected = last.head
            }
            let store = try await data.open(try await data.settings())
            let verifier = try await store.verifyAudit(expecting: expected) { checked in
                if checked % 100_000 == 0 { FileHandle.standardError.write(Data("checked \(checked)\n".utf8)) }
            }
            await store.close()
            if let broken = verifier.broken {
                print(
                    "audit chain broken at entry \(broken.seq): \(broken.reason) (\(verifier.checked) entries before it are intact)"
                )
                throw ExitCode(1)
            }
            let head = verifier.head.map { "head \($0)" } ?? "empty"
            let anchored =
                verifier.anchoredThrough == 0
                ? "no anchor yet" : "anchored through entry \(verifier.anchoredThrough)"
            let keyed = verifier.keyedFrom.map { "links keyed from entry \($0)" } ?? "no keyed link"
            print("audit chain intact: \(verifier.checked) entries, \(head), \(anchored), \(keyed)")
        }
    }

    struct Head: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Prints the audit chain's head, SEQ:HASH, to keep outside the database (audit verify --expect-head).")
        @OptionGroup var data: DataOptions

        func run() async throws {
            let store = try await data.open(try await data.settings())
            let head = try await store.auditHead()
            await store.close()
            guard let head else {
                FileHandle.standardError.write(Data("coffer-server: the audit log is empty\n".utf8))
                throw ExitCode(1)
            }
            print(head)
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
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
#endif
