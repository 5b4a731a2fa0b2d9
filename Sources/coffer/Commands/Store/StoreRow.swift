import ArgumentParser
import Coffer
import CofferStore

/// The record a command acts on: `--table T --id ID`, the id read as the
/// primary key's type; after the store's options, beside them rather than
/// holding them (``KEKOptions`` says why).
struct StoreRow: ParsableArguments {
    @Option(help: "The table.") var table: String
    @Option(help: "The primary key.") var id: String

    /// Opens the store and runs `body` on the row's table and primary key;
    /// nil from `body` means there is no such record (exit 1, naming it).
    func act<T>(
        _ store: StoreOptions, _ kek: KEKOptions, _ body: (RecordStore, StoreSchema.Table, StoreValue) throws -> T?
    ) async throws -> T {
        let opened = try await store.open(kek)
        let table = try opened.schema.table(table)
        let key = try RecordJSON.value(argument: id, field: table.field(table.primaryKey)!, table: table.name)
        guard let result = try body(opened, table, key) else {
            throw CLIFailure("\(table.name) has no record \(id)", status: 1)
        }
        return result
    }
}

extension StoreSchema.Table {
    /// This table with its primary key only, to print a key as a record.
    var keyOnly: StoreSchema.Table {
        StoreSchema.Table(name: name, primaryKey: primaryKey, fields: fields.filter { $0.name == primaryKey })
    }
}
