import ArgumentParser
import Coffer
import CofferStore
import Foundation

struct StoreFind: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find", abstract: "Print the records whose FIELD equals VALUE, as JSON lines (exact matches only)."
    )
    @OptionGroup var store: StoreOptions
    @Option(name: .customLong("table"), help: "The table.")
    var table: String
    @Option(
        name: .customLong("where"),
        help: "FIELD=VALUE, repeated for several (all must hold); sealed fields need a blind index covering them.")
    var conditions: [String] = []
    @Option(
        name: .customLong("where-file"),
        help: "FIELD=PATH: the value read from a file (a trailing newline dropped), kept off the command line.")
    var conditionFiles: [String] = []
    @Option(
        name: .customLong("has-token"),
        help: "FIELD=TOKEN: the records with TOKEN among FIELD's tokens, through its token index.")
    var token: String?
    @Option(name: .customLong("has-token-file"), help: "FIELD=PATH: --has-token with the token read from a file.")
    var tokenFile: String?

    func validate() throws {
        let tokens = [token, tokenFile].compactMap { $0 }.count
        guard (conditions.isEmpty && conditionFiles.isEmpty) != (tokens == 0), tokens <= 1 else {
            throw ValidationError(
                "give --where/--where-file FIELD=… (once or more), or one of --has-token/--has-token-file FIELD=…")
        }
    }

    /// FIELD and VALUE of FIELD=VALUE, the value read from the file PATH when `file`.
    static func split(_ text: String, option: String, file: Bool) throws -> (String, String) {
        guard let equals = text.firstIndex(of: "=") else { throw ValidationError("\(option) is FIELD=…") }
        let rest = String(text[text.index(after: equals)...])
        guard file else { return (String(text[..<equals]), rest) }
        var value = String(decoding: try Input.readAll(path: rest, what: "the value of \(option)"), as: UTF8.self)
        if value.hasSuffix("\n") { value.removeLast() }
        return (String(text[..<equals]), value)
    }

    func run() throws {
        let opened = try store.open()
        let table = try opened.schema.table(table)
        if let given = token ?? tokenFile {
            let (name, value) = try Self.split(
                given, option: token == nil ? "--has-token-file" : "--has-token", file: token == nil)
            if token != nil { Self.warnIfSealed(table.field(name), option: "--has-token") }
            for record in try opened.find(table.name, where: name, hasToken: value) {
                print(StoreJSON.line(record, table: table))
            }
            return
        }
        var wanted: StoreRecord = [:]
        let given =
            try conditions.map { (try Self.split($0, option: "--where", file: false), false) }
            + conditionFiles.map { (try Self.split($0, option: "--where-file", file: true), true) }
        for ((name, value), fromFile) in given {
            guard let field = table.field(name) else {
                throw CLIFailure("\(table.name) has no field \(name)", status: 64)
            }
            guard wanted[name] == nil else { throw ValidationError("the conditions name \(name) twice") }
            if !fromFile { Self.warnIfSealed(field, option: "--where") }
            wanted[name] = try StoreJSON.argument(value, field: field, table: table.name)
        }
        for record in try opened.find(table.name, where: wanted) {
            print(StoreJSON.line(record, table: table))
        }
    }

    /// A sealed field's search value on the command line is visible to
    /// every user of the machine (ps, /proc): say so.
    static func warnIfSealed(_ field: StoreSchema.Field?, option: String) {
        guard let field, field.sealed else { return }
        StandardError.write(
            "coffer: warning: the value for sealed field \(field.name) is on the command line, where other users can see it; use \(option)-file\n"
        )
    }
}
