import ArgumentParser
import Coffer
import CofferStore
import Foundation

struct StoreFind: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find",
        abstract:
            "Print the records whose FIELD equals VALUE (every record without --where), as JSON lines (exact matches only).",
        discussion: """
            --order-by, --limit and --offset page through a table (ordered by clear fields; text by its UTF-8 bytes, \
            null first); --count prints how many records match instead of the records.
            """)
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @Option(help: "The table.") var table: String
    @Option(
        name: .customLong("where"),
        help:
            "FIELD=VALUE, repeated for several (all must hold); sealed fields need a blind index covering them, and a table kept per tenant its tenant's."
    )
    var conditions: [String] = []
    @Option(
        name: .customLong("where-file"),
        help: "FIELD=PATH: the value read from a file (a trailing newline dropped), kept off the command line.")
    var conditionFiles: [String] = []
    @Option(
        name: .customLong("has-token"),
        help: "FIELD=TOKEN: the records with TOKEN among FIELD's tokens, through its token index (with --where too).")
    var token: String?
    @Option(name: .customLong("has-token-file"), help: "FIELD=PATH: --has-token with the token read from a file.")
    var tokenFile: String?
    @Option(
        name: .customLong("order-by"), help: "FIELD or FIELD:desc, a clear field to order by (repeat for ties).")
    var ordering: [String] = []
    @Option(help: "At most N records.") var limit: Int?
    @Option(help: "Skip the first N records.") var offset = 0
    @Flag(help: "Print only how many records match.") var count = false

    func validate() throws {
        guard [token, tokenFile].compactMap({ $0 }).count <= 1 else {
            throw ValidationError("give one of --has-token/--has-token-file FIELD=…, not both")
        }
        guard (limit ?? 0) >= 0, offset >= 0 else { throw ValidationError("--limit and --offset are not negative") }
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

    func run() async throws {
        let opened = try await store.open(kek)
        let table = try opened.schema.table(table)
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
            wanted[name] = try RecordJSON.value(argument: value, field: field, table: table.name)
        }
        var query = Self.ordered(StoreQuery(table.name).filter(wanted), ordering)
        if let given = token ?? tokenFile {
            let (name, value) = try Self.split(
                given, option: token == nil ? "--has-token-file" : "--has-token", file: token == nil)
            if token != nil { Self.warnIfSealed(table.field(name), option: "--has-token") }
            query = query.filter(name, hasToken: value)
        }
        if let limit { query = query.limit(limit, offset: offset) } else { query.offset = offset }
        if count {
            print(try await opened.fetchCount(query))
            return
        }
        var out = ""
        for record in try await opened.fetchAll(query) {
            out += RecordJSON.line(record, table: table)
            out += "\n"
        }
        print(out, terminator: "")
    }

    /// `query` ordered by each `--order-by` FIELD, FIELD:asc or FIELD:desc.
    static func ordered(_ query: StoreQuery, _ ordering: [String]) -> StoreQuery {
        var query = query
        for order in ordering {
            let descending = order.hasSuffix(":desc")
            let name =
                descending ? String(order.dropLast(5)) : order.hasSuffix(":asc") ? String(order.dropLast(4)) : order
            query = query.order(by: name, descending: descending)
        }
        return query
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
