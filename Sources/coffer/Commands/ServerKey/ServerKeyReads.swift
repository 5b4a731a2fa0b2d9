import ArgumentParser
import CofferKeyClient
import CofferStore
import Foundation

/// `coffer server-key show`: what the server holds for a subject.
struct ServerKeyShow: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print a subject's keys: versions, minimum and shred state, never a key (scope keys:read).")
    @OptionGroup var options: OperatorOptions
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        let held = try await options.send { try await $0.keys(subject: $1) }
        if json {
            let keys = held.keys.map { key in
                var fields = [
                    "\"purpose\":\(ServerKeyJSON.string(key.purpose))", "\"current\":\(key.current)",
                    "\"minimum\":\(key.minimum)", "\"versions\":\(key.versions)",
                ]
                if let device = key.device { fields.insert("\"device\":\(ServerKeyJSON.string(device))", at: 1) }
                return "{" + fields.joined(separator: ",") + "}"
            }
            let shredAt = held.shredAt.map(ServerKeyJSON.string) ?? "null"
            print(
                #"{"subject":\#(ServerKeyJSON.string(held.subject)),"keys":[\#(keys.joined(separator: ","))],"shredAt":\#(shredAt),"shredded":\#(held.shredded)}"#
            )
            return
        }
        if held.keys.isEmpty && held.shredAt == nil {
            print("\(held.subject): no keys")
        }
        for key in held.keys {
            let device = key.device.map { ", device \($0)" } ?? ""
            print(
                "\(key.purpose)\(device): version \(key.current) current, \(key.minimum) minimum, \(key.versions) stored"
            )
        }
        if let shredAt = held.shredAt {
            print(held.shredded ? "shredded at \(shredAt)" : "shred pending, at \(shredAt)")
        }
    }
}

/// `coffer server-key subjects`: every subject the server holds keys for.
struct ServerKeySubjects: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subjects",
        abstract: "List the subjects the server holds keys for, or was asked to shred (scope keys:read).")
    @OptionGroup var access: OperatorAccessOptions
    @Option(help: "Start after this subject.") var after = ""
    @Option(help: "Stop after this many (default: all).") var limit: Int?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit is a whole number from 1") }
    }

    func run() async throws {
        var after = self.after
        var left = limit ?? Int.max
        while left > 0 {
            let page = try await access.send { [after, left] in
                try await $0.subjects(after: after, limit: min(left, 1000))
            }
            for subject in page.subjects { print(subject) }
            left -= page.subjects.count
            guard let next = page.next else { break }
            after = next
        }
    }
}

/// JSON text for the commands that print it by hand.
enum ServerKeyJSON {
    /// `value` as a JSON string, quoted as every JSON Coffer prints is.
    static func string(_ value: String) -> String { RecordJSON.quoted(value) }
}
