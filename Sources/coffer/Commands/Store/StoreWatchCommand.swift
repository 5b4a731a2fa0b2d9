import ArgumentParser
import Coffer
import CofferStore
import Foundation

struct StoreWatch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print a query's records as one JSON line now, and again each time they change (until stopped).",
        discussion: """
            Each line is a JSON array of the records, in the query's order. Changes made by this or any other \
            process on the same SQLite file are seen within --tick; on PostgreSQL the query runs again every \
            --period. Lines with equal records are not repeated. --changes N stops after N lines.
            """)
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @Option(help: "The table.") var table: String
    @Option(
        name: .customLong("where"),
        help: "FIELD=VALUE, repeated for several (all must hold); sealed fields need a blind index covering them.")
    var conditions: [String] = []
    @Option(
        name: .customLong("order-by"), help: "FIELD or FIELD:desc, a clear field to order by (repeat for ties).")
    var ordering: [String] = []
    @Option(help: "At most N records.") var limit: Int?
    @Option(help: "Stop after printing N lines.") var changes: Int?
    @Option(help: "How often to look for commits, in milliseconds.") var tick = 50
    @Option(help: "PostgreSQL: how often to run the query again, in milliseconds.") var period = 1000

    func validate() throws {
        guard (limit ?? 0) >= 0, (changes ?? 1) >= 1 else {
            throw ValidationError("--limit is not negative and --changes is at least 1")
        }
        guard tick >= 1, period >= 1 else { throw ValidationError("--tick and --period are at least 1 ms") }
    }

    func run() async throws {
        let opened = try await store.open(kek)
        let table = try opened.schema.table(table)
        var wanted: StoreRecord = [:]
        for condition in conditions {
            let (name, value) = try StoreFind.split(condition, option: "--where", file: false)
            guard let field = table.field(name) else {
                throw CLIFailure("\(table.name) has no field \(name)", status: 64)
            }
            StoreFind.warnIfSealed(field, option: "--where")
            wanted[name] = try RecordJSON.value(argument: value, field: field, table: table.name)
        }
        var query = StoreFind.ordered(StoreQuery(table.name).filter(wanted), ordering)
        if let limit { query = query.limit(limit) }
        let observation = opened.observe(query, tick: .milliseconds(tick), period: .milliseconds(period))
        let limitOfLines = changes
        var printed = 0
        for try await records in observation {
            print("[" + records.map { RecordJSON.line($0, table: table) }.joined(separator: ",") + "]")
            fflush(nil)
            printed += 1
            if let limitOfLines, printed >= limitOfLines { break }
        }
    }
}
