import ArgumentParser
import Coffer
import CofferStore
import Crypto
import Foundation

/// `coffer store alter`: the CLI's schema migration (StoreMigrator).
struct StoreAlter: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alter",
        abstract: "Add the tables, fields and indexes a new schema file has to the store (one migration).",
        discussion: """
            The new schema must keep every table, field and index the store has, unchanged; what it adds is made \
            in one transaction, the records already stored sealed and indexed to match, and recorded under \
            --name in the store's authenticated state. Run again with the same name, it does nothing.
            """)
    @OptionGroup var store: StoreOptions
    @OptionGroup var kek: KEKOptions
    @Option(help: "The new schema (JSON, as for init).") var schema: String
    @Option(help: "The migration's name (default: the new schema's SHA-256).") var name: String?

    func run() async throws {
        let bytes = try Input.readAll(path: schema, what: "the schema")
        let target = try StoreSchema(json: bytes)
        let name = self.name ?? "schema " + Hex.encode(Array(SHA256.hash(data: bytes).prefix(16)))
        let opened = try await store.open(kek)
        var preview = StoreSchemaChange(schema: opened.schema)
        try preview.add(missingFrom: target)
        var migrator = StoreMigrator()
        migrator.registerMigration(name) { change in try change.add(missingFrom: target) }
        let applied = try await migrator.migrate(opened)
        if applied.isEmpty {
            print("\(name): applied before; nothing to do")
        } else {
            for line in preview.summary { print("added \(line)") }
        }
    }
}
